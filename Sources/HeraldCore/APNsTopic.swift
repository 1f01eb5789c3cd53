/// An `apns-topic`: the app's bundle id, or it with a suffix for the push type.
public enum APNsTopic {
    /// Whether `topic` can be a topic at all: 1 to 255 bytes of printable ASCII without spaces.
    public static func isValid(_ topic: String) -> Bool {
        let u = topic.utf8
        guard !u.isEmpty, u.count <= 255 else { return false }
        return u.allSatisfy { $0 > 0x20 && $0 < 0x7F }
    }
}
