import Foundation

extension LinkMessage {
    /// The flat JSON form every message shares; absent fields are left out.
    struct Envelope: Codable {
        var type: String
        var request: Int?
        var nonce: Data?
        var device: String?
        var generation: Int?
        var registrations: [LinkRegistration]?
        var topic: String?
        var environment: APNsEnvironment?
        var token: DeviceToken?
        var code: String?
        var message: String?
        var publicKey: Data?
        var signature: Data?
        var ids: [String]?
        var apnsID: String?
        var uniqueID: String?
        var pushType: PushType?
        var priority: PushPriority?
        var expiration: Int64?
        var collapseID: String?
        var payload: Data?
        var channelID: String?
        var channels: [String]?
        var scope: TokenScope?
        var installation: Int?
        var ticket: Data?
        var ticketSecret: Data?
        var ticketExpires: Int64?
        var proof: Data?
        var reconnectWithin: Int?

        /// The fields by name, as `Codable` reads and writes them; the flat reader knows them by
        /// their bytes and their position (a bit each).
        enum CodingKeys: String, CodingKey, CaseIterable {
            case type, request, nonce, device, generation, registrations, topic, environment, token, code,
                message, publicKey, signature, ids, apnsID, uniqueID, pushType, priority, expiration,
                collapseID, payload, channelID, channels, scope, installation, ticket, ticketSecret, ticketExpires,
                proof, reconnectWithin
        }

        init(type: String) { self.type = type }

        /// The envelope read without `JSONDecoder`, straight from the JSON text of a flat object
        /// (``FlatJSONObject``): a device reads a `push` per notification, the gateway an `ack` per
        /// read. Keys are matched and values converted (hex, base64) from the bytes as they stand.
        /// `nil` when a field has a form `JSONDecoder` might read differently (or reject), so that
        /// it decides.
        init?(flatJSON bytes: UnsafeRawBufferPointer) {
            self.init(type: "")
            var taken: UInt32 = 0
            var envelope = self
            guard FlatJSONObject.forEachRawField(of: bytes, { envelope.take($0, $1, taken: &taken) }),
                taken & 1 << Self.typeBit != 0
            else { return nil }
            self = envelope
        }

        /// Each field's name as bytes, with its bit in the set of fields taken.
        private static let fieldNames: [(name: [UInt8], key: CodingKeys, bit: Int)] = CodingKeys.allCases.enumerated()
            .map { (Array($1.rawValue.utf8), $1, $0) }
        private static let typeBit = CodingKeys.allCases.firstIndex(of: .type)!

        private static func field(named key: FlatJSONObject.Text) -> (key: CodingKeys, bit: Int)? {
            switch key {
            case .unescaped(let name):
                return fieldNames.first { $0.key.rawValue == name }.map { ($0.key, $0.bit) }
            case .bytes(let name):
                for field in fieldNames where field.name.count == name.count {
                    if field.name.withUnsafeBytes({ memcmp($0.baseAddress!, name.baseAddress!, name.count) == 0 }) {
                        return (field.key, field.bit)
                    }
                }
                return nil
            }
        }

        /// Takes one field; `false` when `JSONDecoder` should decide instead (a known field twice,
        /// or in a form it might read differently). `taken` holds a bit for each known field taken.
        mutating func take(_ name: FlatJSONObject.Text, _ value: FlatJSONObject.RawValue, taken: inout UInt32) -> Bool {
            // An unknown field is ignored, as JSONDecoder ignores it.
            guard let (key, bit) = Self.field(named: name) else { return true }
            guard taken & 1 << bit == 0 else { return false }
            taken |= 1 << bit
            switch (key, value) {
            case (.request, .integer(let v)):
                guard let v = Int(exactly: v) else { return false }
                request = v
            case (.generation, .integer(let v)):
                guard let v = Int(exactly: v) else { return false }
                generation = v
            case (.installation, .integer(let v)):
                guard let v = Int(exactly: v) else { return false }
                installation = v
            case (.reconnectWithin, .integer(let v)):
                guard let v = Int(exactly: v) else { return false }
                reconnectWithin = v
            case (.expiration, .integer(let v)): expiration = v
            case (.ticketExpires, .integer(let v)): ticketExpires = v
            case (.priority, .integer(let v)):
                guard let p = Int(exactly: v).flatMap(PushPriority.init(rawValue:)) else { return false }
                priority = p
            case (.type, .text(let v)): type = v.string
            case (.device, .text(let v)): device = v.string
            case (.topic, .text(let v)): topic = v.string
            case (.code, .text(let v)): code = v.string
            case (.message, .text(let v)): message = v.string
            case (.apnsID, .text(let v)): apnsID = v.string
            case (.uniqueID, .text(let v)): uniqueID = v.string
            case (.collapseID, .text(let v)): collapseID = v.string
            case (.channelID, .text(let v)): channelID = v.string
            case (.environment, .text(let v)):
                guard let e = APNsEnvironment(rawValue: v.string) else { return false }
                environment = e
            case (.pushType, .text(let v)):
                guard let t = PushType(rawValue: v.string) else { return false }
                pushType = t
            case (.token, .text(let v)):
                let parsed: DeviceToken?
                switch v {
                case .bytes(let hex): parsed = DeviceToken(hexUTF8: hex)
                case .unescaped(let hex): parsed = DeviceToken(hex: hex)
                }
                guard let parsed else { return false }
                token = parsed
            case (.nonce, .text(let v)):
                guard let d = Self.base64(v) else { return false }
                nonce = d
            case (.publicKey, .text(let v)):
                guard let d = Self.base64(v) else { return false }
                publicKey = d
            case (.signature, .text(let v)):
                guard let d = Self.base64(v) else { return false }
                signature = d
            case (.payload, .text(let v)):
                guard let d = Self.base64(v) else { return false }
                payload = d
            case (.ticket, .text(let v)):
                guard let d = Self.base64(v) else { return false }
                ticket = d
            case (.ticketSecret, .text(let v)):
                guard let d = Self.base64(v) else { return false }
                ticketSecret = d
            case (.proof, .text(let v)):
                guard let d = Self.base64(v) else { return false }
                proof = d
            case (.registrations, .strings(let v)) where v.isEmpty:
                // A device with no app registered (the welcome of an idle device).
                registrations = []
            case (.ids, .strings(let v)): ids = v
            case (.channels, .strings(let v)): channels = v
            default:
                return false
            }
            return true
        }

        /// Base64 as `JSONDecoder` reads `Data`: the canonical form straight from the bytes, and
        /// anything else as Foundation decides.
        private static func base64(_ text: FlatJSONObject.Text) -> Data? {
            if case .bytes(let bytes) = text, let data = Base64.decodeCanonical(bytes) { return data }
            return Data(base64Encoded: text.string)
        }
    }
}
