import Foundation

extension LinkMessage.Envelope {
    /// The envelope as JSON with its keys in `JSONEncoder`'s sorted order, written without
    /// `JSONEncoder`: every connection sends a `challenge` and a `welcome` one way and a `hello` or
    /// `resume` the other, and a reconnect storm opens thousands a second. `nil` when a field needs
    /// `JSONEncoder` (registrations to list). Strings are escaped as ``JSONWriter`` does, which
    /// differs from `JSONEncoder` only in leaving `/` unescaped.
    func flatJSON() -> [UInt8]? {
        if let registrations, !registrations.isEmpty { return nil }
        var o = FlatObject()
        // In sorted key order, as `JSONEncoder` with `.sortedKeys` writes them.
        if let apnsID { o.string("apnsID", apnsID) }
        if let channelID { o.string("channelID", channelID) }
        if let channels { o.strings("channels", channels) }
        if let code { o.string("code", code) }
        if let collapseID { o.string("collapseID", collapseID) }
        if let device { o.string("device", device) }
        if let environment { o.string("environment", environment.rawValue) }
        if let expiration { o.integer("expiration", expiration) }
        if let generation { o.integer("generation", Int64(generation)) }
        if let ids { o.strings("ids", ids) }
        if let installation { o.integer("installation", Int64(installation)) }
        if let message { o.string("message", message) }
        if let nonce { o.base64("nonce", nonce) }
        if let payload { o.base64("payload", payload) }
        if let priority { o.integer("priority", Int64(priority.rawValue)) }
        if let proof { o.base64("proof", proof) }
        if let publicKey { o.base64("publicKey", publicKey) }
        if let pushType { o.string("pushType", pushType.rawValue) }
        if let reconnectWithin { o.integer("reconnectWithin", Int64(reconnectWithin)) }
        if registrations != nil { o.strings("registrations", []) }
        if let request { o.integer("request", Int64(request)) }
        if let scope { o.string("scope", scope.rawValue) }
        if let signature { o.base64("signature", signature) }
        if let ticket { o.base64("ticket", ticket) }
        if let ticketExpires { o.integer("ticketExpires", ticketExpires) }
        if let ticketSecret { o.base64("ticketSecret", ticketSecret) }
        if let token { o.hex("token", token.bytes) }
        if let topic { o.string("topic", topic) }
        o.string("type", type)
        if let uniqueID { o.string("uniqueID", uniqueID) }
        return o.finish()
    }
}

/// A flat JSON object written key by key.
private struct FlatObject {
    var w = JSONWriter(capacity: 256)
    var empty = true

    /// Writes the separator and the key; its value follows.
    mutating func key(_ name: StaticString) {
        w.raw(empty ? "{\"" : ",\"")
        empty = false
        w.raw(name)
        w.raw("\":")
    }

    mutating func string(_ name: StaticString, _ s: String) {
        key(name)
        w.string(s)
    }

    mutating func integer(_ name: StaticString, _ v: Int64) {
        key(name)
        w.integer(v)
    }

    mutating func base64(_ name: StaticString, _ d: Data) {
        key(name)
        w.base64(d)
    }

    mutating func hex(_ name: StaticString, _ b: [UInt8]) {
        key(name)
        w.hex(b)
    }

    mutating func strings(_ name: StaticString, _ items: [String]) {
        key(name)
        w.raw("[")
        for (i, item) in items.enumerated() {
            if i > 0 { w.raw(",") }
            w.string(item)
        }
        w.raw("]")
    }

    mutating func finish() -> [UInt8] {
        w.raw(empty ? "{}" : "}")
        return w.bytes
    }
}
