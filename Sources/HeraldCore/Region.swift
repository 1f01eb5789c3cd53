import Foundation

/// A location fix from the device's location source.
public struct LocationFix: Sendable, Hashable, Codable {
    public var latitude: Double
    public var longitude: Double

    /// Creates a fix.
    public init(latitude: Double, longitude: Double) {
        self.latitude = latitude
        self.longitude = longitude
    }
}

/// Great-circle distance on a spherical Earth (haversine).
public enum GreatCircle {
    /// Mean Earth radius, metres (IUGG).
    public static let earthRadius = 6_371_008.8

    /// Distance in metres between two points given in degrees.
    public static func distance(_ lat1: Double, _ lon1: Double, _ lat2: Double, _ lon2: Double) -> Double {
        let p1 = lat1 * .pi / 180
        let p2 = lat2 * .pi / 180
        let dp = (lat2 - lat1) * .pi / 180
        let dl = (lon2 - lon1) * .pi / 180
        let a = sin(dp / 2) * sin(dp / 2) + cos(p1) * cos(p2) * sin(dl / 2) * sin(dl / 2)
        return 2 * earthRadius * atan2(a.squareRoot(), (1 - a).squareRoot())
    }
}

/// A region boundary crossing.
public struct RegionCrossing: Sendable, Hashable {
    /// Entry or exit.
    public enum Kind: String, Sendable, Hashable, Codable { case entry, exit }
    public var regionIdentifier: String
    public var kind: Kind
    /// Index of the fix in the sequence at which the crossing was seen.
    public var fixIndex: Int

    /// Creates a crossing.
    public init(regionIdentifier: String, kind: Kind, fixIndex: Int) {
        self.regionIdentifier = regionIdentifier
        self.kind = kind
        self.fixIndex = fixIndex
    }
}

/// Tracks which regions the device is inside and reports crossings as fixes arrive.
/// The first fix for a region only establishes where the device is (no crossing): a region the device is
/// already inside when monitoring starts does not fire on entry (Herald's choice; see docs).
public struct RegionMonitor: Sendable, Hashable, Codable {
    /// Inside (`true`) / outside (`false`) per region identifier; absent = not known yet.
    public private(set) var inside: [String: Bool] = [:]

    /// Creates a monitor with no knowledge.
    public init() {}

    /// Feeds fixes in order; returns the crossings of the given regions.
    public mutating func process(_ fixes: [LocationFix], regions: [CircularRegion]) -> [RegionCrossing] {
        var crossings: [RegionCrossing] = []
        for (index, fix) in fixes.enumerated() {
            for region in regions {
                let now = region.contains(fix)
                defer { inside[region.identifier] = now }
                guard let before = inside[region.identifier], before != now else { continue }
                crossings.append(
                    RegionCrossing(regionIdentifier: region.identifier, kind: now ? .entry : .exit, fixIndex: index))
            }
        }
        return crossings
    }

    /// Forgets a region (when its trigger is removed).
    public mutating func forget(_ identifier: String) { inside[identifier] = nil }
}

/// A circular geographic region (`CLCircularRegion`).
public struct CircularRegion: Sendable, Hashable, Codable {
    public var identifier: String
    public var latitude: Double
    public var longitude: Double
    /// Metres.
    public var radius: Double
    public var notifyOnEntry: Bool
    public var notifyOnExit: Bool

    /// Creates a region; throws for an empty identifier, coordinates out of range or a radius ≤ 0.
    public init(
        identifier: String, latitude: Double, longitude: Double, radius: Double, notifyOnEntry: Bool = true,
        notifyOnExit: Bool = true
    ) throws(NotificationError) {
        self.identifier = identifier
        self.latitude = latitude
        self.longitude = longitude
        self.radius = radius
        self.notifyOnEntry = notifyOnEntry
        self.notifyOnExit = notifyOnExit
        try validate()
    }

    /// Checks the region.
    public func validate() throws(NotificationError) {
        guard !identifier.isEmpty else { throw .invalid("region.identifier", "must not be empty") }
        guard latitude.isFinite, (-90...90).contains(latitude) else {
            throw .invalid("region.latitude", "must be -90…90, not \(latitude)")
        }
        guard longitude.isFinite, (-180...180).contains(longitude) else {
            throw .invalid("region.longitude", "must be -180…180, not \(longitude)")
        }
        guard radius.isFinite, radius > 0 else {
            throw .invalid("region.radius", "must be greater than 0, not \(radius)")
        }
        guard notifyOnEntry || notifyOnExit else {
            throw .invalid("region", "notifyOnEntry or notifyOnExit must be set, or the region never fires")
        }
    }

    /// Whether a point lies in the region (great-circle distance ≤ radius).
    public func contains(_ fix: LocationFix) -> Bool {
        GreatCircle.distance(latitude, longitude, fix.latitude, fix.longitude) <= radius
    }
}
