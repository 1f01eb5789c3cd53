import Crypto
import Foundation
import HeraldCore

/// Issues device tokens: an HMAC-SHA256, under the gateway's secret, over the device, the app's
/// bundle id, the environment and the device's generation. Tokens are therefore stable (the same
/// registration returns the same token), unforgeable without the secret, and change when the
/// device is reset (its generation goes up).
public struct TokenIssuer: Sendable {
    private let key: SymmetricKey

    /// Creates an issuer over a secret of at least 32 bytes.
    public init(secret: [UInt8]) {
        precondition(secret.count >= 32, "the token secret must be at least 32 bytes")
        self.key = SymmetricKey(data: secret)
    }

    /// The token for one app of one device in one environment at the device's current generation.
    public func token(device: String, bundleID: String, environment: APNsEnvironment, generation: Int) -> DeviceToken {
        var message = Data()
        for part in ["herald-token-v1", device, bundleID, environment.rawValue, String(generation)] {
            message.append(contentsOf: part.utf8)
            message.append(0)
        }
        let mac = HMAC<SHA256>.authenticationCode(for: message, using: key)
        return DeviceToken(bytes: Array(mac))
    }
}
