import Foundation
import HeraldCore

/// What the provider API and the channel management API check alike: the environment a request
/// names, identifiers, and who is asking.
enum ProviderChecks {
    /// The environment a request addresses: named by the authority's host
    /// (`api.sandbox.…`, `api.development.…`, `sandbox.…`, `development.…`,
    /// `api-manage-broadcast.sandbox.…`, `api-broadcast.sandbox.…` → development;
    /// `api.push.apple.com`, `production.…`, `api-manage-broadcast.push.apple.com`,
    /// `api-broadcast.push.apple.com` → production), else the listener's default.
    static func environment(authority: String?, default fallback: APNsEnvironment) -> APNsEnvironment {
        guard let authority, !authority.isEmpty else { return fallback }
        func starts(with prefix: StaticString) -> Bool { ASCIICase.hasPrefix(authority.utf8, prefix) }
        if starts(with: "api.sandbox.") || starts(with: "api.development.") || starts(with: "sandbox.")
            || starts(with: "development.") || starts(with: "api-manage-broadcast.sandbox.")
            || starts(with: "api-broadcast.sandbox.")
        {
            return .development
        }
        if starts(with: "api.push.apple.com") || starts(with: "production.")
            || starts(with: "api-manage-broadcast.push.apple.com") || starts(with: "api-broadcast.push.apple.com")
        {
            return .production
        }
        return fallback
    }

    /// Who sends a request for `topic` in `environment`: the team of the connection's certificate or
    /// of the request's provider token (with the topics the key is limited to, if it is), or why
    /// neither is good for it. A suspended team is `Forbidden`.
    static func caller(
        registry: Registry, topic: String, environment: APNsEnvironment, authorization: String?,
        connection: inout ProviderConnectionState, now: Date
    ) -> Result<(teamID: String, keyTopics: [String]?), APNsReason> {
        var keyTopics: [String]?
        let teamID: String
        if let grant = connection.certificate {
            if grant.problem != nil { return .failure(.badCertificate) }
            guard grant.environments.contains(environment) else { return .failure(.badCertificateEnvironment) }
            guard grant.covers(topic) else { return .failure(.topicDisallowed) }
            guard let app = registry.app(grant.bundleID) else { return .failure(.badCertificate) }
            teamID = app.teamID
        } else {
            switch connection.authenticate(
                authorization: authorization, environment: environment, registry: registry, now: now)
            {
            case .failure(let reason): return .failure(reason)
            case .success(let key):
                keyTopics = key.topics
                teamID = key.teamID
            }
        }
        if registry.team(teamID)?.suspended == true { return .failure(.forbidden) }
        return .success((teamID, keyTopics))
    }

    /// `8-4-4-4-12` hex digits, either case.
    static func isCanonicalUUID(_ text: String) -> Bool {
        let u = text.utf8
        guard u.count == 36 else { return false }
        for (i, c) in u.enumerated() {
            if i == 8 || i == 13 || i == 18 || i == 23 {
                guard c == UInt8(ascii: "-") else { return false }
            } else {
                let isHex = (c >= 0x30 && c <= 0x39) || (c | 0x20 >= 0x61 && c | 0x20 <= 0x66)
                guard isHex else { return false }
            }
        }
        return true
    }
}

extension ProviderResponse {
    /// `PayloadTooLarge` for a request whose body went over what any path takes, named as its
    /// API names it (`apns-request-id` on the channel and broadcast APIs, `apns-id` elsewhere).
    static func tooLarge(_ request: ProviderRequest, now: Date) -> ProviderResponse {
        if request.path.hasPrefix("/1/") || request.path.hasPrefix("/4/") {
            return .requestError(
                .payloadTooLarge,
                requestID: request.requestID.flatMap { ProviderChecks.isCanonicalUUID($0) ? $0 : nil }
                    ?? RandomUUID.timeOrderedLowercaseString(at: now))
        }
        return .error(.payloadTooLarge, apnsID: request.apnsID ?? RandomUUID.timeOrderedLowercaseString(at: now))
    }
}
