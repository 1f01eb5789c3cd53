import Crypto
import Foundation
import HeraldCore
import SwiftASN1
import X509

/// The gateway's own certificate authority: it signs the gateway's TLS server certificate and
/// the app certificates providers authenticate with (docs/provider-api.md). App certificates carry
/// `UID=<bundle id>` in the subject and Apple's extensions: 1.2.840.113635.100.6.3.1
/// (development), …6.3.2 (production) and …6.3.6 (topics).
public struct GatewayCA: Sendable {
    /// The CA certificate.
    public let certificate: Certificate
    /// The CA's private key.
    public let privateKey: P256.Signing.PrivateKey

    /// OIDs Apple uses in push certificates.
    public enum OID {
        /// `UID` in a distinguished name (RFC 4519).
        public static let userID: ASN1ObjectIdentifier = [0, 9, 2342, 19_200_300, 100, 1, 1]
        /// Marks a development (sandbox) certificate.
        public static let development: ASN1ObjectIdentifier = [1, 2, 840, 113_635, 100, 6, 3, 1]
        /// Marks a production certificate.
        public static let production: ASN1ObjectIdentifier = [1, 2, 840, 113_635, 100, 6, 3, 2]
        /// Lists the certificate's topics.
        public static let topics: ASN1ObjectIdentifier = [1, 2, 840, 113_635, 100, 6, 3, 6]
    }

    /// Creates a new CA (a fresh key, valid ten years).
    public static func generate(name: String = "Herald Development CA", now: Date = Date()) throws -> GatewayCA {
        let key = P256.Signing.PrivateKey()
        let subject = try DistinguishedName {
            OrganizationName("Herald")
            CommonName(name)
        }
        let certificate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(),
            publicKey: .init(key.publicKey), notValidBefore: now.addingTimeInterval(-3600),
            notValidAfter: now.addingTimeInterval(10 * 365 * 86400), issuer: subject, subject: subject,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
                SubjectKeyIdentifier(hash: .init(key.publicKey))
            },
            issuerPrivateKey: .init(key))
        return GatewayCA(certificate: certificate, privateKey: key)
    }

    /// Loads a CA from PEM.
    public init(certificatePEM: String, privateKeyPEM: String) throws {
        self.certificate = try Certificate(pemEncoded: certificatePEM)
        self.privateKey = try P256.Signing.PrivateKey(pemRepresentation: privateKeyPEM)
    }

    init(certificate: Certificate, privateKey: P256.Signing.PrivateKey) {
        self.certificate = certificate
        self.privateKey = privateKey
    }

    /// The CA certificate as PEM.
    public var certificatePEM: String { get throws { try certificate.serializeAsPEM().pemString } }

    /// Issues a TLS server certificate for the given host names and IP addresses.
    public func issueServerCertificate(
        hosts: [String], key: P256.Signing.PrivateKey, now: Date = Date()
    ) throws -> Certificate {
        var names: [GeneralName] = []
        for host in hosts {
            if let bytes = Self.ipAddressBytes(host) {
                names.append(.ipAddress(ASN1OctetString(contentBytes: ArraySlice(bytes))))
            } else {
                names.append(.dnsName(host))
            }
        }
        return try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: .init(key.publicKey),
            notValidBefore: now.addingTimeInterval(-3600), notValidAfter: now.addingTimeInterval(825 * 86400),
            issuer: certificate.subject,
            subject: try DistinguishedName {
                OrganizationName("Herald")
                CommonName(hosts.first ?? "localhost")
            },
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                try ExtendedKeyUsage([.serverAuth])
                SubjectAlternativeNames(names)
            },
            issuerPrivateKey: .init(privateKey))
    }

    /// Issues an app (provider) certificate: `UID=<bundle id>`, the environment extensions and
    /// the topics extension. With no topics listed, it covers the bundle id and its suffixes.
    public func issueAppCertificate(
        bundleID: String, environments: Set<APNsEnvironment>, topics: [String] = [], key: P256.Signing.PrivateKey,
        validity: TimeInterval = 365 * 86400, now: Date = Date()
    ) throws -> Certificate {
        var extensions: [Certificate.Extension] = []
        let null: ArraySlice<UInt8> = [0x05, 0x00]
        if environments.contains(.development) {
            extensions.append(.init(oid: OID.development, critical: false, value: null))
        }
        if environments.contains(.production) {
            extensions.append(.init(oid: OID.production, critical: false, value: null))
        }
        if !topics.isEmpty {
            extensions.append(.init(oid: OID.topics, critical: false, value: ArraySlice(try Self.encodeTopics(topics))))
        }
        var all = try Certificate.Extensions {
            Critical(BasicConstraints.notCertificateAuthority)
            Critical(KeyUsage(digitalSignature: true))
            try ExtendedKeyUsage([.clientAuth])
        }
        for e in extensions { try all.append(e) }
        let subject = try DistinguishedName([
            RelativeDistinguishedName.Attribute(type: OID.userID, utf8String: bundleID),
            RelativeDistinguishedName.Attribute(
                type: .RDNAttributeType.commonName, utf8String: "Apple Push Services: \(bundleID)"),
            RelativeDistinguishedName.Attribute(type: .RDNAttributeType.organizationName, utf8String: "Herald"),
        ])
        return try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: .init(key.publicKey),
            notValidBefore: now.addingTimeInterval(-3600), notValidAfter: now.addingTimeInterval(validity),
            issuer: certificate.subject, subject: subject, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: all, issuerPrivateKey: .init(privateKey))
    }

    /// What a client certificate grants. Certificates not signed by this CA, outside their
    /// validity, or without a UID come back with a ``CertificateGrant/problem``.
    public func grant(for cert: Certificate, now: Date = Date()) -> CertificateGrant {
        var bundleID = ""
        for rdn in cert.subject {
            for attribute in rdn where attribute.type == OID.userID {
                bundleID = String(attribute.value) ?? ""
            }
        }
        var environments: Set<APNsEnvironment> = []
        var topics: [String] = []
        for e in cert.extensions {
            if e.oid == OID.development { environments.insert(.development) }
            if e.oid == OID.production { environments.insert(.production) }
            if e.oid == OID.topics { topics = (try? Self.decodeTopics(Array(e.value))) ?? [] }
        }
        var grant = CertificateGrant(bundleID: bundleID, topics: topics, environments: environments)
        if bundleID.isEmpty {
            grant.problem = "the certificate has no UID"
        } else if cert.issuer != certificate.subject
            || !certificate.publicKey.isValidSignature(cert.signature, for: cert)
        {
            grant.problem = "the certificate was not issued by this gateway's CA"
        } else if now < cert.notValidBefore || now > cert.notValidAfter {
            grant.problem = "the certificate is outside its validity period"
        } else if environments.isEmpty {
            grant.problem = "the certificate names no environment"
        }
        return grant
    }

    /// DER for the topics extension: a sequence of (topic, sequence of kind) pairs.
    static func encodeTopics(_ topics: [String]) throws -> [UInt8] {
        var serializer = DER.Serializer()
        try serializer.appendConstructedNode(identifier: .sequence) { s in
            for topic in topics {
                try s.serialize(ASN1UTF8String(topic))
                try s.appendConstructedNode(identifier: .sequence) { kind in
                    try kind.serialize(ASN1UTF8String(Self.kind(of: topic)))
                }
            }
        }
        return serializer.serializedBytes
    }

    static func kind(of topic: String) -> String {
        if topic.hasSuffix(".voip") { return "voip" }
        if topic.hasSuffix(".complication") { return "complication" }
        return "app"
    }

    static func decodeTopics(_ bytes: [UInt8]) throws -> [String] {
        let root = try DER.parse(bytes)
        return try DER.sequence(root, identifier: .sequence) { nodes in
            var topics: [String] = []
            while let node = nodes.next() {
                if node.identifier == .utf8String {
                    topics.append(String(try ASN1UTF8String(derEncoded: node)))
                }
            }
            return topics
        }
    }

    static func ipAddressBytes(_ text: String) -> [UInt8]? {
        let parts = text.split(separator: ".")
        if parts.count == 4, let bytes = Optional(parts.compactMap { UInt8($0) }), bytes.count == 4 { return bytes }
        if text == "::1" { return Array(repeating: 0, count: 15) + [1] }
        return nil
    }
}
