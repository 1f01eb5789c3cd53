/// The `apns-push-type` values (docs/provider-api.md).
public enum PushType: String, Sendable, CaseIterable, Codable {
    case alert, background, location, voip, complication, fileprovider, mdm, liveactivity, pushtotalk, widgets,
        controls

    /// The suffix the `apns-topic` must carry for this push type, appended to the bundle id.
    /// `mdm` topics are the certificate's UID and have no suffix rule; `nil` here.
    public var topicSuffix: String? {
        switch self {
        case .alert, .background: ""
        case .voip: ".voip"
        case .complication: ".complication"
        case .fileprovider: ".pushkit.fileprovider"
        case .location: ".location-query"
        case .liveactivity: ".push-type.liveactivity"
        case .pushtotalk: ".voip-ptt"
        case .widgets: ".push-type.widgets"
        case .controls: ".push-type.controls"
        case .mdm: nil
        }
    }

    /// The largest payload, in bytes, the HTTP/2 API accepts for this push type.
    public var maximumPayloadSize: Int { self == .voip ? 5120 : 4096 }
}

/// The `apns-priority` values.
public enum PushPriority: Int, Sendable, CaseIterable, Codable, Comparable {
    /// Power first: never wakes the device; rides along with other traffic.
    case low = 1
    /// Respect the device's power: may be batched.
    case normal = 5
    /// Deliver now (the default).
    case immediate = 10

    /// Orders priorities by urgency.
    public static func < (lhs: PushPriority, rhs: PushPriority) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// The payload size limits of APNs over its history (docs/provider-api.md).
public enum PayloadSizeLimit: Int, Sendable {
    /// Legacy binary interface, simple and enhanced formats.
    case legacyBinary = 256
    /// Legacy binary interface, frame format (iOS 8).
    case binaryFrame = 2048
    /// HTTP/2 provider API.
    case http2 = 4096
    /// HTTP/2 provider API, VoIP pushes.
    case voip = 5120
}
