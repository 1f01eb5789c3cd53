/// Which of the two services a listener runs.
public enum LegacyService: String, Sendable {
    /// The binary gateway: commands 0, 1 and 2 in, error packets out.
    case binary = "binary gateway"
    /// The feedback service: the topic's feedback tuples out, then close.
    case feedback = "feedback service"
}
