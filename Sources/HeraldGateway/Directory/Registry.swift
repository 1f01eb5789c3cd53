import Crypto
import Foundation
import HeraldCore
import Synchronization

/// The gateway's directory in memory: teams, provider keys, apps, devices and token
/// registrations. The provider API reads it on every request, so lookups are a dictionary access
/// under an uncontended lock. It is loaded from the ``GatewayStore`` at start and kept in step
/// with every write that goes through ``GatewayDirectory``.
public final class Registry: Sendable {
    struct State {
        var teams: [String: Team] = [:]
        var keys: [String: ProviderKey] = [:]
        var verifiers: [String: P256.Signing.PublicKey] = [:]
        var apps: [String: TeamApp] = [:]
        var devices: [String: DeviceRecord] = [:]
        var tokens: [APNsEnvironment: [DeviceToken: Registration]] = [.development: [:], .production: [:]]
        /// (device, bundle id, environment) → current token.
        var current: [String: DeviceToken] = [:]
    }

    private let state = Mutex(State())

    /// An empty registry.
    public init() {}

    static func slot(_ device: String, _ bundleID: String, _ environment: APNsEnvironment) -> String {
        device + "\u{0}" + bundleID + "\u{0}" + environment.rawValue
    }

    // MARK: Reads

    /// A team by id.
    public func team(_ id: String) -> Team? { state.withLock { $0.teams[id] } }
    /// Every team.
    public var teams: [Team] { state.withLock { Array($0.teams.values) }.sorted { $0.id < $1.id } }
    /// A provider key by key id.
    public func key(_ id: String) -> ProviderKey? { state.withLock { $0.keys[id] } }
    /// A key and its parsed public key, for verifying a token.
    public func verifier(_ id: String) -> (ProviderKey, P256.Signing.PublicKey)? {
        state.withLock { s in
            guard let key = s.keys[id], let verifier = s.verifiers[id] else { return nil }
            return (key, verifier)
        }
    }
    /// Every key.
    public var keys: [ProviderKey] { state.withLock { Array($0.keys.values) }.sorted { $0.id < $1.id } }
    /// An app by bundle id.
    public func app(_ bundleID: String) -> TeamApp? { state.withLock { $0.apps[bundleID] } }
    /// Every app.
    public var apps: [TeamApp] { state.withLock { Array($0.apps.values) }.sorted { $0.bundleID < $1.bundleID } }
    /// A device by id.
    public func device(_ id: String) -> DeviceRecord? { state.withLock { $0.devices[id] } }
    /// Every device.
    public var devices: [DeviceRecord] { state.withLock { Array($0.devices.values) }.sorted { $0.id < $1.id } }
    /// The registration a token names in an environment (current or invalidated).
    public func registration(_ token: DeviceToken, in environment: APNsEnvironment) -> Registration? {
        state.withLock { $0.tokens[environment]?[token] }
    }
    /// The current, valid registrations of a device.
    public func registrations(device: String) -> [Registration] {
        state.withLock { s in
            s.tokens.values.flatMap { $0.values }.filter { $0.deviceID == device && $0.invalidatedAt == nil }
        }.sorted { ($0.bundleID, $0.environment.rawValue) < ($1.bundleID, $1.environment.rawValue) }
    }
    /// The current token of one app on one device, if registered.
    public func currentToken(device: String, bundleID: String, environment: APNsEnvironment) -> DeviceToken? {
        state.withLock { $0.current[Self.slot(device, bundleID, environment)] }
    }

    // MARK: Writes (called by GatewayDirectory after the store has the change)

    func put(_ team: Team) { state.withLock { $0.teams[team.id] = team } }
    func removeTeam(_ id: String) { state.withLock { _ = $0.teams.removeValue(forKey: id) } }
    func put(_ key: ProviderKey) {
        state.withLock { s in
            s.keys[key.id] = key
            s.verifiers[key.id] = key.signingKey
        }
    }
    func removeKey(_ id: String) {
        state.withLock { s in
            s.keys[id] = nil
            s.verifiers[id] = nil
        }
    }
    func put(_ app: TeamApp) { state.withLock { $0.apps[app.bundleID] = app } }
    func removeApp(_ bundleID: String) { state.withLock { _ = $0.apps.removeValue(forKey: bundleID) } }
    func put(_ device: DeviceRecord) { state.withLock { $0.devices[device.id] = device } }
    func removeDevice(_ id: String) { state.withLock { _ = $0.devices.removeValue(forKey: id) } }
    func put(_ registration: Registration) {
        state.withLock { s in
            s.tokens[registration.environment, default: [:]][registration.token] = registration
            let slot = Self.slot(registration.deviceID, registration.bundleID, registration.environment)
            if registration.invalidatedAt == nil {
                s.current[slot] = registration.token
            } else if s.current[slot] == registration.token {
                s.current[slot] = nil
            }
        }
    }
}
