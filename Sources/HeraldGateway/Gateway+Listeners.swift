import HeraldRuntime

/// How the gateway names its listeners' addresses and reports a listener that cannot start.
extension Gateway {
    /// An address as the host of a URL written into `gateway.json`: a wildcard (`--listen 0.0.0.0`,
    /// bound only when asked for) is given as loopback, which is what a local client reaches; an IPv6
    /// address gets brackets.
    static func urlHost(_ address: String) -> String {
        let host = connectHost(address)
        return host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
    }

    /// The address a client in this process connects to for a listener bound to `address`: loopback
    /// for a wildcard.
    static func connectHost(_ address: String) -> String {
        if address == "0.0.0.0" { return "127.0.0.1" }
        if address == "::" { return "::1" }
        return address
    }

    static func listening<T>(
        _ listener: String, _ host: String, _ port: Int, sockets: [CInt] = [], _ start: () async throws -> T
    ) async throws -> T {
        do {
            return try await start()
        } catch {
            let address =
                sockets.isEmpty
                ? "\(host):\(port)"
                : "the sockets handed over as descriptors \(sockets.map(String.init).joined(separator: ", "))"
            throw ListenerStartError(listener: listener, address: address, reason: "\(error)")
        }
    }
}
