import ArgumentParser
import Foundation
import HeraldRuntime
import NIOCore

/// `herald probe`: the gateway's `/readyz` from the command line, for a container's health check or
/// a script that waits for a gateway.
struct ProbeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "probe",
        abstract: "Ask a running gateway whether it is ready: exit 0 when it is, 1 with the reason when not.",
        discussion: """
            Asks the admin API's /readyz (docs/operations.md). With --state, the address and, over TLS, the \
            CA come from the gateway.json the gateway writes in its state directory once it listens; a \
            gateway that has not written it yet is not ready.
            """)

    @Option(help: "The gateway's state directory.")
    var state = ".herald/gateway"
    @Option(help: "The admin API's URL instead of the state directory's (http://127.0.0.1:8080).")
    var url: String?
    @Option(help: "The CA certificate (PEM) that signed an https:// admin API's certificate.")
    var ca: String?
    @Option(help: "Seconds to wait for the answer.")
    var timeout: Double = 5

    func validate() throws {
        guard timeout > 0 && timeout <= 31_536_000 else {
            throw ValidationError("--timeout must be more than 0 seconds and at most a year (31536000)")
        }
        if let url, !(url.hasPrefix("http://") || url.hasPrefix("https://")) {
            throw ValidationError("--url must be an http:// or https:// URL, not '\(url)'")
        }
    }

    func run() async throws {
        var base = url
        var caPath = ca
        if base == nil {
            guard let info = try? GatewayInfo.read(directory: URL(fileURLWithPath: state)) else {
                print("not ready: no gateway.json in \(state) (the gateway has not started listening)")
                throw ExitCode.failure
            }
            base = info.adminURL
            caPath = caPath ?? info.caCertificate
        }
        let verdict: (Int, Data)
        do {
            verdict = try await HTTPJSONClient(base: base!, ca: caPath).exchange(
                "GET", "/readyz", timeout: .nanoseconds(Int64(timeout * 1e9)))
        } catch {
            // The error names the URL and why ("GET …/readyz: connection refused").
            print("not ready: \(error)")
            throw ExitCode.failure
        }
        guard verdict.0 == 200 else {
            print("not ready: \(verdict.0) \(String(decoding: verdict.1, as: UTF8.self))")
            throw ExitCode.failure
        }
        print("ready")
    }
}
