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
        /// (device, bundle id, environment, scope) → current token.
        var current: [String: DeviceToken] = [:]
        /// Every token a device was ever issued, by environment: a device's registrations are read
        /// on each of its connections, which must not scan every device's.
        var byDevice: [String: Set<TokenRef>] = [:]
    }

    /// A token in its environment.
    struct TokenRef: Hashable {
        var environment: APNsEnvironment
        var token: DeviceToken
    }

    private let state = Mutex(State())

    /// An empty registry.
    public init() {}

    static func slot(
        _ device: String, _ bundleID: String, _ environment: APNsEnvironment, _ scope: TokenScope? = nil
    ) -> String {
        let slot = device + "\u{0}" + bundleID + "\u{0}" + environment.rawValue
        return scope.map { slot + "\u{0}" + $0.rawValue } ?? slot
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
    /// The current, valid registrations of a device (its apps' tokens and their scoped ones).
    public func registrations(device: String) -> [Registration] {
        state.withLock { s in
            (s.byDevice[device] ?? []).compactMap { s.tokens[$0.environment]?[$0.token] }
                .filter { $0.invalidatedAt == nil }
        }.sorted {
            ($0.bundleID, $0.environment.rawValue, $0.scope?.rawValue ?? "")
                < ($1.bundleID, $1.environment.rawValue, $1.scope?.rawValue ?? "")
        }
    }
    /// The current token of one app on one device (or its token for `scope`), if registered.
    public func currentToken(
        device: String, bundleID: String, environment: APNsEnvironment, scope: TokenScope? = nil
    ) -> DeviceToken? {
        state.withLock { $0.current[Self.slot(device, bundleID, environment, scope)] }
    }

    // MARK: Writes (called by GatewayDirectory after the store has the change)

    func put(_ team: Team) { state.withLock { $0.teams[team.id] = team } }
    func removeTeam(_ id: String) { state.withLock { _ = $0.teams.removeValue(forKey: id) } }
    func put(_ key: ProviderKey) { state.withLock { $0.put(key) } }
    func removeKey(_ id: String) { state.withLock { $0.removeKey(id) } }
    func put(_ app: TeamApp) { state.withLock { $0.apps[app.bundleID] = app } }
    func removeApp(_ bundleID: String) { state.withLock { _ = $0.apps.removeValue(forKey: bundleID) } }
    func put(_ device: DeviceRecord) { state.withLock { $0.devices[device.id] = device } }
    func removeDevice(_ id: String) { state.withLock { _ = $0.devices.removeValue(forKey: id) } }
    func put(_ registration: Registration) { state.withLock { $0.put(registration) } }

    /// Takes what the store holds now for changed records (another node changed them): each one
    /// asked for is replaced by what was found or removed when nothing was; ``DirectoryChange/everything``
    /// replaces the whole registry. One lock: a reader sees the registry before or after.
    func apply(_ reload: DirectoryReload) {
        let found = reload.found
        state.withLock { s in
            if reload.changes.contains(.everything) {
                s = State()
                for team in found.teams { s.teams[team.id] = team }
                for key in found.keys { s.put(key) }
                for app in found.apps { s.apps[app.bundleID] = app }
                for device in found.devices { s.devices[device.id] = device }
                for registration in found.registrations { s.put(registration) }
                return
            }
            for change in reload.changes {
                switch change {
                case .team(let id): s.teams[id] = found.teams.first { $0.id == id }
                case .key(let id):
                    if let key = found.keys.first(where: { $0.id == id }) { s.put(key) } else { s.removeKey(id) }
                case .app(let id): s.apps[id] = found.apps.first { $0.bundleID == id }
                case .device(let id): s.devices[id] = found.devices.first { $0.id == id }
                case .everything: break
                }
            }
            for registration in found.registrations { s.put(registration) }
        }
    }
}

extension Registry.State {
    mutating func put(_ key: ProviderKey) {
        keys[key.id] = key
        verifiers[key.id] = key.signingKey
    }

    mutating func removeKey(_ id: String) {
        keys[id] = nil
        verifiers[id] = nil
    }

    mutating func put(_ registration: Registration) {
        tokens[registration.environment, default: [:]][registration.token] = registration
        byDevice[registration.deviceID, default: []].insert(
            Registry.TokenRef(environment: registration.environment, token: registration.token))
        let slot = Registry.slot(
            registration.deviceID, registration.bundleID, registration.environment, registration.scope)
        if registration.invalidatedAt == nil {
            current[slot] = registration.token
        } else if current[slot] == registration.token {
            current[slot] = nil
        }
    }
}
