/// Every reason the APNs provider API can answer with (docs/provider-api.md), with its HTTP status.
/// This is the one place Herald defines them.
public enum APNsReason: String, Sendable, CaseIterable, Codable, Error {
    case badCollapseId = "BadCollapseId"
    case badDeviceToken = "BadDeviceToken"
    case badExpirationDate = "BadExpirationDate"
    case badMessageId = "BadMessageId"
    case badPriority = "BadPriority"
    case badTopic = "BadTopic"
    case deviceTokenNotForTopic = "DeviceTokenNotForTopic"
    case duplicateHeaders = "DuplicateHeaders"
    case idleTimeout = "IdleTimeout"
    case invalidPushType = "InvalidPushType"
    case missingDeviceToken = "MissingDeviceToken"
    case missingTopic = "MissingTopic"
    case payloadEmpty = "PayloadEmpty"
    case topicDisallowed = "TopicDisallowed"
    case badCertificate = "BadCertificate"
    case badCertificateEnvironment = "BadCertificateEnvironment"
    case expiredProviderToken = "ExpiredProviderToken"
    case forbidden = "Forbidden"
    case invalidProviderToken = "InvalidProviderToken"
    case missingProviderToken = "MissingProviderToken"
    case unrelatedKeyIdInToken = "UnrelatedKeyIdInToken"
    case badEnvironmentKeyIdInToken = "BadEnvironmentKeyIdInToken"
    case badPath = "BadPath"
    case methodNotAllowed = "MethodNotAllowed"
    case expiredToken = "ExpiredToken"
    case unregistered = "Unregistered"
    case payloadTooLarge = "PayloadTooLarge"
    case tooManyProviderTokenUpdates = "TooManyProviderTokenUpdates"
    case tooManyRequests = "TooManyRequests"
    case internalServerError = "InternalServerError"
    case serviceUnavailable = "ServiceUnavailable"
    case shutdown = "Shutdown"

    /// The HTTP status APNs answers this reason with.
    public var status: Int {
        switch self {
        case .badCollapseId, .badDeviceToken, .badExpirationDate, .badMessageId, .badPriority, .badTopic,
            .deviceTokenNotForTopic, .duplicateHeaders, .idleTimeout, .invalidPushType, .missingDeviceToken,
            .missingTopic, .payloadEmpty, .topicDisallowed:
            400
        case .badCertificate, .badCertificateEnvironment, .expiredProviderToken, .forbidden, .invalidProviderToken,
            .missingProviderToken, .unrelatedKeyIdInToken, .badEnvironmentKeyIdInToken:
            403
        case .badPath: 404
        case .methodNotAllowed: 405
        case .expiredToken, .unregistered: 410
        case .payloadTooLarge: 413
        case .tooManyProviderTokenUpdates, .tooManyRequests: 429
        case .internalServerError: 500
        case .serviceUnavailable, .shutdown: 503
        }
    }
}
