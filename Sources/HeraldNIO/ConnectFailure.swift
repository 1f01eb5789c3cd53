import Foundation
import NIOCore
import NIOPosix

/// Why a connection could not be made, as a person reads it ("connection refused", "cannot
/// resolve push.example.com"), instead of swift-nio's description of its attempts
/// (`SingleConnectionFailure(target: …, error: connection reset (error set): Connection refused)`).
public enum ConnectFailure {
    /// `error`, a failure to connect (or any other), in words: the system's reason for the first
    /// address tried, or why the name did not resolve; any other error as it describes itself.
    public static func describe(_ error: any Error) -> String {
        switch error {
        case let error as NIOConnectionError:
            // The first address tried says why; a name that resolved to nothing has no attempts.
            if let first = error.connectionErrors.first { return describe(first.error) }
            if let dns = error.dnsAError ?? error.dnsAAAAError {
                let why = (dns as? SocketAddressError.UnknownHost).map { $0.errorDescription.lowercased() } ?? "\(dns)"
                return "cannot resolve \(error.host): \(why)"
            }
            return "no address for \(error.host)"
        case let error as IOError:
            guard let message = strerror(error.errnoCode) else { return "\(error)" }
            let text = String(cString: message)
            return text.prefix(1).lowercased() + text.dropFirst()
        case ChannelError.connectTimeout(let timeout):
            return "no connection within \(Double(timeout.nanoseconds) / 1e9) s"
        default:
            return "\(error)"
        }
    }
}
