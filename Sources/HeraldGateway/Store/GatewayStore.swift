/// The gateway's persistence, behind protocols as every role's is (docs/architecture.md), one
/// protocol per subject: the directory (``DirectoryStore``), pushes, the delivery log and feedback
/// (``PushStore``), broadcast channels (``ChannelStore``). A gateway store keeps all three; the
/// nodes of a cluster (``NodeStore``) and its fault rules (``FaultRuleStore``) only a shared
/// store does. The users of the store ask for the subject they use.
///
/// Implementations must not assume they are the only process writing: every method is one
/// transaction, and the offline-queue policy is enforced inside it.
public protocol GatewayStore: DirectoryStore, PushStore, ChannelStore {}
