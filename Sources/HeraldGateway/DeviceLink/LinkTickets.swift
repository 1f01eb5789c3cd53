import Crypto
import Foundation
import HeraldCore

/// Seals and opens device-link resumption tickets (docs/device-link.md, "Resuming";
/// docs/security.md): AES-GCM under a key derived from the gateway's token secret, which every node
/// of a cluster shares, so a ticket one node issued is accepted by every node and by the same node
/// after a restart.
///
/// A ticket holds the device id, its generation, a digest of its public key, an expiry, when the
/// device last signed, and a random 32-byte secret that the device also receives (once, in its
/// `welcome`). Presenting the ticket alone is not enough: the device proves it holds the secret with
/// an HMAC over the fresh challenge. Renewals carry the time of the signature on, and end
/// ``renewalLimit`` lifetimes after it: a ticket and its secret, stolen, open the link for that long
/// at most, then the device must sign again.
struct LinkTickets: Sendable {
    /// Why a ticket was not accepted (the `TicketRefused` message).
    struct Refusal: Error, Equatable {
        var message: String
    }

    /// What a ticket holds.
    struct Contents: Equatable {
        var device: String
        var generation: Int
        var keyDigest: Data
        var expires: Int64
        var secret: Data
        /// When the device last signed (UNIX seconds): the renewals that followed end
        /// ``LinkTickets/renewalLimit`` lifetimes after it.
        var authenticated: Int64
    }

    /// The format of a ticket's contents. Version 1 had no time of the signature; such a ticket is
    /// refused, and its device signs once.
    static let version: UInt8 = 2
    /// How many lifetimes a chain of renewals lasts, counted from the signature that began it.
    static let renewalLimit: Int64 = 4
    /// How far another node's clock may be ahead when it sealed a ticket's expiry, in seconds.
    static let clockSlack: Int64 = 300
    static let label = Data("herald-link-ticket-v1".utf8)

    let key: SymmetricKey
    let lifetime: Duration
    /// ``lifetime`` in whole seconds.
    let seconds: Int64

    /// Tickets under a key derived from the token secret, valid for `lifetime`.
    init(issuer: TokenIssuer, lifetime: Duration) {
        self.key = issuer.derivedKey(label: Self.label)
        self.lifetime = lifetime
        self.seconds = lifetime.components.seconds
    }

    /// The first 16 bytes of the SHA-256 of a device's public key: a ticket is void once the
    /// device's key is another.
    static func keyDigest(_ publicKey: Data) -> Data { Data(SHA256.hash(data: publicKey).prefix(16)) }

    /// A new ticket for `device`, with a fresh secret, for a device that signed at `authenticated`
    /// (nil: it just signed, `now`). It expires a lifetime from `now`, or when the renewals since
    /// that signature end, whichever comes first. `nil` only if sealing failed, which AES-GCM with a
    /// 32-byte key and a random nonce does not.
    func issue(for device: DeviceRecord, now: Date, authenticated: Int64? = nil) -> LinkTicket? {
        let secret = RandomUUID.bytes(32)
        let seconds = Int64(now.timeIntervalSince1970.rounded(.down))
        let authenticated = authenticated ?? seconds
        let expires = min(seconds + self.seconds, renewalsEnd(authenticated))
        var plain = Data(capacity: 1 + 8 + 8 + 16 + 32 + 8 + device.id.utf8.count)
        plain.append(Self.version)
        Self.append(expires, to: &plain)
        Self.append(Int64(device.generation), to: &plain)
        plain.append(Self.keyDigest(device.publicKey))
        plain.append(secret)
        Self.append(authenticated, to: &plain)
        plain.append(contentsOf: device.id.utf8)
        // The nonce from the pooled generator: swift-crypto's own draws eight bytes a system call.
        guard let nonce = try? AES.GCM.Nonce(data: RandomUUID.bytes(12)),
            let sealed = try? AES.GCM.seal(plain, using: key, nonce: nonce, authenticating: Self.label),
            let combined = sealed.combined
        else { return nil }
        return LinkTicket(ticket: combined, secret: secret, expires: expires)
    }

    /// When the renewals after a signature at `authenticated` end.
    func renewalsEnd(_ authenticated: Int64) -> Int64 { authenticated + Self.renewalLimit * seconds }

    /// The ticket a resumed device's `welcome` carries: the one it presented (`ticket`, which holds
    /// `contents`) while more than half of ``lifetime`` is left of it, or when its renewals have
    /// ended (it expires, and the device signs); else a new one, from the same signature. Handing the
    /// same ticket back spares a seal per reconnection and grants nothing more: the presented ticket
    /// stays valid until its expiry either way, and its secret is the one the device already holds
    /// (docs/security.md, "Resumption tickets").
    func next(presented ticket: Data, holding contents: Contents, for device: DeviceRecord, now: Date) -> LinkTicket? {
        let seconds = Int64(now.timeIntervalSince1970.rounded(.down))
        if contents.expires - seconds > self.seconds / 2 || renewalsEnd(contents.authenticated) <= contents.expires {
            return LinkTicket(ticket: ticket, secret: contents.secret, expires: contents.expires)
        }
        return issue(for: device, now: now, authenticated: contents.authenticated)
    }

    /// What `ticket` holds, or why it is not one of this gateway's.
    func open(_ ticket: Data) -> Result<Contents, Refusal> {
        guard let box = try? AES.GCM.SealedBox(combined: ticket),
            let plain = try? AES.GCM.open(box, using: key, authenticating: Self.label)
        else { return .failure(Refusal(message: "the ticket was not issued by this gateway")) }
        let bytes = [UInt8](plain)
        guard bytes.first == Self.version else {
            return .failure(Refusal(message: "the ticket is of an older format"))
        }
        guard bytes.count > 73, let device = String(validating: bytes[73...], as: UTF8.self) else {
            return .failure(Refusal(message: "the ticket's contents are malformed"))
        }
        return .success(
            Contents(
                device: device, generation: Int(Self.int64(bytes, at: 9)), keyDigest: Data(bytes[17..<33]),
                expires: Self.int64(bytes, at: 1), secret: Data(bytes[33..<65]),
                authenticated: Self.int64(bytes, at: 65)))
    }

    /// Checks a resumption: the ticket opens and `proof` is the HMAC of `authenticated` under its
    /// secret (``DeviceLink/resumedBytes(nonce:)`` over the challenge's nonce, or
    /// ``DeviceLink/upgradeResumedBytes(webSocketKey:time:)``), checked first, so that whoever holds a
    /// ticket without its secret learns nothing more of the device; then it names `claimed`, is
    /// unexpired, expires no later than this gateway's own lifetime allows (a lifetime lowered, or
    /// a node with a higher one, takes effect at once), its renewals have not ended, and it matches
    /// the device's current record (same key, same generation, not deleted). Returns the device's
    /// record and what the ticket holds.
    func check(
        claimed: String, ticket: Data, proof: Data, authenticating authenticated: Data, now: Date,
        record: (String) -> DeviceRecord?
    ) -> Result<(DeviceRecord, Contents), Refusal> {
        let contents: Contents
        switch open(ticket) {
        case .failure(let refusal): return .failure(refusal)
        case .success(let c): contents = c
        }
        guard
            HMAC<SHA256>.isValidAuthenticationCode(
                proof, authenticating: authenticated,
                using: SymmetricKey(data: contents.secret))
        else { return .failure(Refusal(message: "the proof does not match the ticket")) }
        guard contents.device == claimed else {
            return .failure(Refusal(message: "the ticket is another device's"))
        }
        let seconds = Int64(now.timeIntervalSince1970.rounded(.down))
        guard seconds < contents.expires else {
            return .failure(Refusal(message: "the ticket has expired"))
        }
        guard contents.expires - seconds <= self.seconds + Self.clockSlack else {
            return .failure(Refusal(message: "the ticket outlasts this gateway's ticket lifetime"))
        }
        guard seconds < renewalsEnd(contents.authenticated) else {
            return .failure(Refusal(message: "the ticket's renewals have ended: the device signs again"))
        }
        guard let device = record(claimed), device.deletedAt == nil else {
            return .failure(Refusal(message: "device \(claimed) is not registered"))
        }
        guard device.generation == contents.generation else {
            return .failure(Refusal(message: "the device was reset since the ticket was issued"))
        }
        guard Self.keyDigest(device.publicKey) == contents.keyDigest else {
            return .failure(Refusal(message: "the device's key changed since the ticket was issued"))
        }
        return .success((device, contents))
    }

    private static func append(_ value: Int64, to data: inout Data) {
        withUnsafeBytes(of: value.bigEndian) { data.append(contentsOf: $0) }
    }

    private static func int64(_ bytes: [UInt8], at offset: Int) -> Int64 {
        var value: Int64 = 0
        for i in offset..<offset + 8 { value = value << 8 | Int64(bytes[i]) }
        return value
    }
}
