import Foundation
import HeraldCore

/// Everything the registry holds, as loaded from a store.
public struct DirectorySnapshot: Sendable {
    /// Teams.
    public var teams: [Team] = []
    /// Provider keys.
    public var keys: [ProviderKey] = []
    /// Apps.
    public var apps: [TeamApp] = []
    /// Devices.
    public var devices: [DeviceRecord] = []
    /// Registrations, current and invalidated.
    public var registrations: [Registration] = []

    /// An empty snapshot.
    public init() {}
}

/// Where the gateway's directory is kept: teams, provider keys, apps, devices and their
/// registrations (``GatewayDirectory`` writes here first, then into the ``Registry``).
/// Every method is one transaction; implementations must not assume they are the only process
/// writing.
public protocol DirectoryStore: Sendable {
    /// Everything the registry needs at start.
    func loadDirectory() async throws -> DirectorySnapshot
    /// Inserts or replaces a team.
    func save(_ team: Team) async throws
    /// Deletes a team.
    func deleteTeam(_ id: String) async throws
    /// Inserts or replaces a key.
    func save(_ key: ProviderKey) async throws
    /// Deletes a key.
    func deleteKey(_ id: String) async throws
    /// Inserts or replaces an app.
    func save(_ app: TeamApp) async throws
    /// Deletes an app.
    func deleteApp(_ bundleID: String) async throws
    /// Inserts or replaces a device.
    func save(_ device: DeviceRecord) async throws
    /// Inserts or replaces many devices in one transaction (a load test's thousands at once).
    func save(devices: [DeviceRecord]) async throws
    /// Inserts or replaces registrations, feedback entries (for removed apps) and, when given, the
    /// device record, in one transaction (a reset's new generation and its invalidated tokens
    /// land together or not at all).
    func save(_ registrations: [Registration], feedback: [FeedbackEntry], device: DeviceRecord?) async throws
}

extension DirectoryStore {
    /// One device after another; a store that can should do it in one transaction.
    public func save(devices: [DeviceRecord]) async throws {
        for device in devices { try await save(device) }
    }
}
