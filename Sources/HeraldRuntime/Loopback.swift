/// Which addresses are this machine's loopback: what every listener binds by default, and the only
/// peers that may use a cleartext device link.
public enum Loopback {
    /// `localhost`, `127.x.x.x`, `::1` (bracketed or not) and IPv4-mapped `::ffff:127.x.x.x`.
    public static func contains(_ host: String) -> Bool {
        host == "localhost" || host == "::1" || host == "[::1]" || host.hasPrefix("127.")
            || host.hasPrefix("::ffff:127.")
    }
}
