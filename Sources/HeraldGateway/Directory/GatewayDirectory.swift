import Crypto
import Foundation
import HeraldCore

/// Changes to the gateway's directory: each goes to the ``DirectoryStore`` first and then into the
/// in-memory ``Registry``, so what the provider API sees is always what is durable.
public struct GatewayDirectory: Sendable {
    /// The in-memory registry the provider API reads.
    public let registry: Registry
    /// Where the directory is kept.
    public let store: any DirectoryStore
    /// The token issuer.
    public let issuer: TokenIssuer

    /// Why a directory change was refused.
    public struct Failure: Error, Equatable, Sendable, CustomStringConvertible {
        /// An HTTP status for the admin API.
        public var status: Int
        /// What was wrong, naming the field.
        public var description: String

        static func notFound(_ what: String) -> Failure { Failure(status: 404, description: "\(what) not found") }
        static func invalid(_ what: String) -> Failure { Failure(status: 400, description: what) }
    }

    /// Creates a directory and loads the registry from the store.
    public static func open(store: any DirectoryStore, issuer: TokenIssuer) async throws -> GatewayDirectory {
        let registry = Registry()
        let snapshot = try await store.loadDirectory()
        for t in snapshot.teams { registry.put(t) }
        for k in snapshot.keys { registry.put(k) }
        for a in snapshot.apps { registry.put(a) }
        for d in snapshot.devices { registry.put(d) }
        for r in snapshot.registrations { registry.put(r) }
        return GatewayDirectory(registry: registry, store: store, issuer: issuer)
    }

    static func isIdentifier(_ s: String, length: Int? = nil) -> Bool {
        if let length, s.utf8.count != length { return false }
        return !s.isEmpty && s.utf8.count <= 64
            && s.utf8.allSatisfy {
                ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A)
            }
    }

    // MARK: Teams, keys, apps

    /// Adds or renames a team. Team ids are 10 letters or digits, like Apple's.
    @discardableResult
    public func putTeam(id: String, name: String = "", suspended: Bool = false) async throws -> Team {
        guard Self.isIdentifier(id, length: 10) else { throw Failure.invalid("team id must be 10 letters or digits") }
        let team = Team(id: id, name: name, suspended: suspended)
        try await store.save(team)
        registry.put(team)
        return team
    }

    /// Removes a team with its keys and apps.
    public func removeTeam(_ id: String) async throws {
        guard registry.team(id) != nil else { throw Failure.notFound("team \(id)") }
        for key in registry.keys where key.teamID == id { try await removeKey(key.id) }
        for app in registry.apps where app.teamID == id { try await removeApp(app.bundleID) }
        try await store.deleteTeam(id)
        registry.removeTeam(id)
    }

    /// Registers a provider key's public half. Key ids are 10 letters or digits.
    @discardableResult
    public func putKey(
        id: String, teamID: String, publicKey: P256.Signing.PublicKey, topics: [String]? = nil,
        environment: APNsEnvironment? = nil
    ) async throws -> ProviderKey {
        guard Self.isIdentifier(id, length: 10) else { throw Failure.invalid("key id must be 10 letters or digits") }
        guard registry.team(teamID) != nil else { throw Failure.notFound("team \(teamID)") }
        if let existing = registry.key(id), existing.teamID != teamID {
            throw Failure(status: 409, description: "key \(id) belongs to team \(existing.teamID)")
        }
        let key = ProviderKey(id: id, teamID: teamID, publicKey: publicKey, topics: topics, environment: environment)
        try await store.save(key)
        registry.put(key)
        return key
    }

    /// Generates a key pair, registers the public half and returns the private key (a `.p8` file's PEM).
    public func generateKey(
        teamID: String, id: String? = nil, topics: [String]? = nil, environment: APNsEnvironment? = nil
    ) async throws -> (key: ProviderKey, privateKeyPEM: String) {
        let privateKey = P256.Signing.PrivateKey()
        let keyID = id ?? Self.randomIdentifier(length: 10)
        let key = try await putKey(
            id: keyID, teamID: teamID, publicKey: privateKey.publicKey, topics: topics, environment: environment)
        return (key, privateKey.pemRepresentation)
    }

    /// Revokes a key: its tokens answer `InvalidProviderToken` from now on.
    public func revokeKey(_ id: String) async throws {
        guard var key = registry.key(id) else { throw Failure.notFound("key \(id)") }
        key.revoked = true
        try await store.save(key)
        registry.put(key)
    }

    /// Deletes a key.
    public func removeKey(_ id: String) async throws {
        guard registry.key(id) != nil else { throw Failure.notFound("key \(id)") }
        try await store.deleteKey(id)
        registry.removeKey(id)
    }

    /// Registers an app (its bundle id) for a team, or changes it; `broadcast`: whether it may use
    /// broadcast channels.
    @discardableResult
    public func putApp(bundleID: String, teamID: String, broadcast: Bool = true) async throws -> TeamApp {
        guard APNsTopic.isValid(bundleID), bundleID.contains(".") else {
            throw Failure.invalid("bundle id must be a reverse-DNS name without spaces, like com.example.app")
        }
        guard registry.team(teamID) != nil else { throw Failure.notFound("team \(teamID)") }
        if let existing = registry.app(bundleID), existing.teamID != teamID {
            throw Failure(status: 409, description: "app \(bundleID) belongs to team \(existing.teamID)")
        }
        let app = TeamApp(bundleID: bundleID, teamID: teamID, broadcast: broadcast)
        try await store.save(app)
        registry.put(app)
        return app
    }

    /// Removes an app.
    public func removeApp(_ bundleID: String) async throws {
        guard registry.app(bundleID) != nil else { throw Failure.notFound("app \(bundleID)") }
        try await store.deleteApp(bundleID)
        registry.removeApp(bundleID)
    }

    // MARK: Devices and tokens

    /// Registers a device. Devices that connect over the device link bring a public key;
    /// a device created through the admin API has none until a device connects as it with a key
    /// (until then its pushes wait in the offline store).
    public func registerDevice(id: String? = nil, publicKey: Data = Data(), now: Date) async throws -> DeviceRecord {
        let deviceID = id ?? RandomUUID.lowercaseString()
        guard Self.isDeviceID(deviceID) else {
            throw Failure.invalid("device id must be 1-64 letters, digits or '-'")
        }
        if let existing = registry.device(deviceID) {
            guard existing.deletedAt == nil else {
                throw Failure(status: 410, description: "device \(deviceID) was deleted")
            }
            if existing.publicKey == publicKey { return existing }
            guard existing.publicKey.isEmpty else {
                throw Failure(status: 409, description: "device \(deviceID) is registered with another key")
            }
            // A device created through the admin API is claimed by the first key that connects as it.
            var claimed = existing
            claimed.publicKey = publicKey
            try await store.save(claimed)
            registry.put(claimed)
            return claimed
        }
        let device = DeviceRecord(id: deviceID, publicKey: publicKey, createdAt: now)
        try await store.save(device)
        registry.put(device)
        return device
    }

    static func isDeviceID(_ s: String) -> Bool { DeviceLink.isDeviceID(s.utf8) }

    /// Registers new devices without keys and `bundleID` on each, in two transactions: how a load
    /// test or a bulk-send test gets thousands of tokens at once (one at a time, each would be a
    /// transaction of its own). Every id must be new. Returns the registrations, in the ids' order.
    public func registerDevices(_ ids: [String], app bundleID: String, environment: APNsEnvironment, now: Date)
        async throws -> [Registration]
    {
        guard APNsTopic.isValid(bundleID) else { throw Failure.invalid("bundle id must not contain spaces") }
        for id in ids {
            guard Self.isDeviceID(id) else { throw Failure.invalid("device id must be 1-64 letters, digits or '-'") }
            guard registry.device(id) == nil else {
                throw Failure(status: 409, description: "device \(id) exists")
            }
        }
        let devices = ids.map { DeviceRecord(id: $0, publicKey: Data(), createdAt: now) }
        let registrations = devices.map { device in
            Registration(
                token: issuer.token(
                    device: device.id, bundleID: bundleID, environment: environment, generation: device.generation),
                deviceID: device.id, bundleID: bundleID, environment: environment, generation: device.generation,
                registeredAt: now)
        }
        try await store.save(devices: devices)
        try await store.save(registrations, feedback: [], device: nil)
        for device in devices { registry.put(device) }
        for registration in registrations { registry.put(registration) }
        return registrations
    }

    /// Scoped tokens (Live Activities', push-to-start) one app on one device may hold at once in an
    /// environment: far more than its activities (5 live) and attributes types need, few enough that
    /// a device cannot fill the store with them.
    public static let scopedTokenLimit = 64

    /// Registers an app on a device in an environment and returns its token. Registering again
    /// returns the same token; an app registered again after its removal with the same
    /// `installation` gets its token back and leaves the feedback list. `installation` counts the
    /// app's installs on the device (0: the first, as the admin API and older devices register): a
    /// reinstalled app gets a new token, while the old one keeps answering 410 `Unregistered` and
    /// stays on the feedback list.
    public func registerApp(
        device deviceID: String, bundleID: String, environment: APNsEnvironment, scope: TokenScope? = nil,
        installation: Int = 0, now: Date
    ) async throws -> Registration {
        guard let device = registry.device(deviceID), device.deletedAt == nil else {
            throw Failure.notFound("device \(deviceID)")
        }
        guard APNsTopic.isValid(bundleID) else { throw Failure.invalid("bundle id must not contain spaces") }
        guard installation >= 0 else { throw Failure.invalid("installation must be 0 or more") }
        let token = issuer.token(
            device: deviceID, bundleID: bundleID, environment: environment, generation: device.generation,
            scope: scope, installation: installation)
        if let existing = registry.registration(token, in: environment), existing.invalidatedAt == nil {
            return existing
        }
        if scope != nil {
            let held = registry.registrations(device: deviceID).filter {
                $0.bundleID == bundleID && $0.environment == environment && $0.scope != nil
            }.count
            guard held < Self.scopedTokenLimit else {
                throw Failure(
                    status: 429,
                    description: "device \(deviceID) holds \(held) scoped tokens of \(bundleID); give one up first")
            }
        }
        let registration = Registration(
            token: token, deviceID: deviceID, bundleID: bundleID, environment: environment,
            generation: device.generation, registeredAt: now, scope: scope)
        try await store.save([registration], feedback: [], device: nil)
        registry.put(registration)
        return registration
    }

    /// Removes an app from a device: its token answers 410 `Unregistered` with the removal time and
    /// goes on the app's feedback list. With a `scope`, only that scoped token goes (a Live Activity
    /// ended), and not on the feedback list, which names apps removed.
    @discardableResult
    public func unregisterApp(
        device deviceID: String, bundleID: String, environment: APNsEnvironment, scope: TokenScope? = nil, now: Date
    ) async throws -> Registration {
        guard
            let token = registry.currentToken(
                device: deviceID, bundleID: bundleID, environment: environment, scope: scope),
            var registration = registry.registration(token, in: environment)
        else {
            throw Failure.notFound(
                "app \(bundleID)\(scope.map { " token \($0)" } ?? "") on device \(deviceID) in \(environment.rawValue)")
        }
        registration.invalidatedAt = now
        registration.invalidation = .appRemoved
        let feedback =
            scope == nil
            ? [FeedbackEntry(bundleID: bundleID, token: token, environment: environment, removedAt: now)] : []
        try await store.save([registration], feedback: feedback, device: nil)
        registry.put(registration)
        return registration
    }

    /// A push reached a token whose app was removed (through the legacy binary interface, which
    /// does not answer it): the token goes back on the app's feedback list with its removal time,
    /// unless the app has been registered again meanwhile.
    public func noteFailedDelivery(_ registration: Registration, removedAt: Date) async throws {
        guard registry.registration(registration.token, in: registration.environment)?.invalidation == .appRemoved
        else { return }
        let feedback = FeedbackEntry(
            bundleID: registration.bundleID, token: registration.token, environment: registration.environment,
            removedAt: removedAt)
        try await store.save([], feedback: [feedback], device: nil)
    }

    /// Resets a device: its generation goes up and every token it had answers 410 `Unregistered`.
    @discardableResult
    public func resetDevice(_ deviceID: String, now: Date) async throws -> DeviceRecord {
        guard var device = registry.device(deviceID) else { throw Failure.notFound("device \(deviceID)") }
        device.generation += 1
        device.resetAt = now
        try await invalidateTokens(of: device, as: .deviceReset, now: now)
        return device
    }

    /// Reads the whole directory from the store again (after the test API erased devices there).
    public func reloadEverything() async throws {
        registry.apply(DirectoryReload(changes: [.everything], found: try await store.loadDirectory()))
    }

    /// Deletes a device: its tokens answer 410 `ExpiredToken` from now on. The device row stays
    /// (with its tokens' history) so the id cannot be taken over.
    public func deleteDevice(_ deviceID: String, now: Date) async throws {
        guard var device = registry.device(deviceID) else { throw Failure.notFound("device \(deviceID)") }
        device.deletedAt = now
        try await invalidateTokens(of: device, as: .deviceDeleted, now: now)
    }

    /// Writes the changed device and its invalidated tokens in one transaction, then updates the registry.
    private func invalidateTokens(of device: DeviceRecord, as reason: Registration.Invalidation, now: Date) async throws
    {
        let invalidated = registry.registrations(device: device.id).map { r -> Registration in
            var r = r
            r.invalidatedAt = now
            r.invalidation = reason
            return r
        }
        try await store.save(invalidated, feedback: [], device: device)
        for r in invalidated { registry.put(r) }
        registry.put(device)
    }

    static func randomIdentifier(length: Int) -> String {
        let alphabet = Array("ABCDEFGHJKLMNPQRSTUVWXYZ23456789")
        return String((0..<length).map { _ in alphabet.randomElement()! })
    }
}
