import Crypto
import Foundation
import HeraldCore

/// Issues device tokens: an HMAC-SHA256, under the gateway's secret, over the device, the app's
/// bundle id, the environment, the device's generation and the app's installation on the device.
/// Tokens are therefore stable (the same registration returns the same token), unforgeable without
/// the secret, and change when the device is reset (its generation goes up) or the app is
/// reinstalled (its installation goes up).
public struct TokenIssuer: Sendable {
    private let key: SymmetricKey

    /// Creates an issuer over a secret of at least 32 bytes.
    public init(secret: [UInt8]) {
        precondition(secret.count >= 32, "the token secret must be at least 32 bytes")
        self.key = SymmetricKey(data: secret)
    }

    /// A key for another purpose derived from the same secret (HKDF-SHA256 with `label` as its
    /// info), so that every node of a cluster, which shares the secret, derives the same one.
    func derivedKey(label: Data) -> SymmetricKey {
        HKDF<SHA256>.deriveKey(inputKeyMaterial: key, info: label, outputByteCount: 32)
    }

    /// The token for one app of one device in one environment at the device's current generation
    /// and the app's `installation` (0: the first); with a `scope`, the app's token for that scope (an
    /// app's own token is unchanged by scopes).
    public func token(
        device: String, bundleID: String, environment: APNsEnvironment, generation: Int, scope: TokenScope? = nil,
        installation: Int = 0
    ) -> DeviceToken {
        var message = Data()
        var parts = ["herald-token-v1", device, bundleID, environment.rawValue, String(generation)]
        if let scope { parts.append(scope.rawValue) }
        // The first installation's token is what it always was; a reinstall's differs.
        if installation > 0 { parts.append("install:\(installation)") }
        for part in parts {
            message.append(contentsOf: part.utf8)
            message.append(0)
        }
        let mac = HMAC<SHA256>.authenticationCode(for: message, using: key)
        return DeviceToken(bytes: Array(mac))
    }
}
