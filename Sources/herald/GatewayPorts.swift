import ArgumentParser

/// The gateway's listening ports, as `herald gateway` and `herald up` take them (0 = any free port).
/// `herald up` gives node k of a cluster each port plus 10×(k−1).
struct GatewayPorts: ParsableArguments {
    @Option(name: .long, help: "Port of the TLS provider API (HTTP/2 with ALPN h2 and http/1.1; 0 = any free port).")
    var port = 2197
    @Option(
        name: .long,
        help: "Port of the loopback development listener (h2c prior knowledge and HTTP/1.1; 0 = any free port).")
    var devPort = 2198
    @Option(name: .long, help: "Port of the loopback admin API (0 = any free port).")
    var adminPort = 8080
    @Option(
        name: .long,
        help: "Port of the device link (WebSocket at /device/v1: TLS, or cleartext from loopback; 0 = any free port).")
    var linkPort = 5223
    @Option(
        name: .long,
        help: "Port of the legacy binary provider interface (TLS with an app certificate; 0 = any free port).")
    var binaryPort = 2195
    @Option(name: .long, help: "Port of the legacy feedback service (TLS with an app certificate; 0 = any free port).")
    var feedbackPort = 2196
    @Option(
        name: .long,
        help: "Port of the broadcast channel management API over TLS (HTTP/2 and HTTP/1.1; 0 = any free port).")
    var channelsPort = 2295
    @Option(
        name: .long,
        help: "Port of the channel management API in cleartext on loopback, for development (0 = any free port).")
    var channelsDevPort = 2296

    /// The `herald gateway` arguments for node `node` of `herald up`: each port plus 10×(node−1),
    /// 0 staying "any free port".
    func arguments(node: Int) -> [String] {
        func shifted(_ port: Int) -> String { port == 0 ? "0" : String(port + 10 * (node - 1)) }
        return [
            "--port", shifted(port), "--dev-port", shifted(devPort), "--link-port", shifted(linkPort),
            "--admin-port", shifted(adminPort), "--binary-port", shifted(binaryPort), "--feedback-port",
            shifted(feedbackPort), "--channels-port", shifted(channelsPort), "--channels-dev-port",
            shifted(channelsDevPort),
        ]
    }
}
