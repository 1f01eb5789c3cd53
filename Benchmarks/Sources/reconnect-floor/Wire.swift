import Foundation
import HeraldCore

// What a reconnection puts on the wire, the same for every server of the floor: the device's upgrade
// request (as `GatewayLinkClient` writes it, with a `Herald-Resume`-sized header) and the answer, a
// `101` and one WebSocket text frame the size of the link's `welcome`.

/// The bytes the floor's requests and answers are made of.
enum Wire {
    /// The length of the `welcome`'s JSON that follows the `101` (a resumption's welcome carries the
    /// device, its next ticket and that ticket's secret: about this size).
    static let welcomeBytes = 330

    /// An upgrade request for the link's path with `key`; with `resume`, the device's
    /// `Herald-Resume` for that key (the gateway resumes the device and answers with its
    /// `welcome`), else a header of the length a `Herald-Resume` has (a server of the floor reads it
    /// as it reads any header; the gateway ignores a header it does not know).
    static func request(host: String, port: Int, key: String, resume: String? = nil) -> [UInt8] {
        let last =
            resume.map { "\(DeviceLink.upgradeResumeHeader): \($0)" }
            ?? "x-herald-floor: \(String(repeating: "x", count: 230))"
        let text =
            "GET \(DeviceLink.path) HTTP/1.1\r\nhost: \(host):\(port)\r\nupgrade: websocket\r\nconnection: upgrade\r\n"
            + "sec-websocket-key: \(key)\r\nsec-websocket-version: 13\r\n\(last)\r\n\r\n"
        return Array(text.utf8)
    }

    /// Whether a whole answer's first frame is the link's `welcome`.
    static func isWelcome(_ answer: UnsafeRawBufferPointer) -> Bool {
        find(Array("\"type\":\"welcome\"".utf8), in: answer) != nil
    }

    /// A `Sec-WebSocket-Key` for connection `index`: 16 bytes in base64, different per connection.
    static func key(_ index: Int) -> String {
        var bytes = [UInt8](repeating: 0, count: 16)
        withUnsafeBytes(of: UInt64(index).littleEndian) { bytes.replaceSubrange(0..<8, with: $0) }
        return Data(bytes).base64EncodedString()
    }

    /// The answer to a request whose key is `key`: the `101`, then a text frame of ``welcomeBytes``.
    static func answer(key: String) -> [UInt8] {
        let head =
            "HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: upgrade\r\n"
            + "sec-websocket-accept: \(DeviceLink.webSocketAccept(key: key))\r\n\r\n"
        var bytes = Array(head.utf8)
        bytes += [0x81, 126, UInt8(welcomeBytes >> 8), UInt8(welcomeBytes & 0xff)]
        let prefix = "{\"type\":\"welcome\",\"pad\":\""
        let payload = prefix + String(repeating: "w", count: welcomeBytes - prefix.utf8.count - 2) + "\"}"
        precondition(payload.utf8.count == welcomeBytes)
        bytes += Array(payload.utf8)
        return bytes
    }

    /// The value of the `sec-websocket-key` header in a request head, read from its bytes.
    static func key(inHead head: UnsafeRawBufferPointer) -> String? {
        let name = Array("\r\nsec-websocket-key: ".utf8)
        guard let start = find(name, in: head) else { return nil }
        let from = start + name.count
        var end = from
        while end < head.count, head[end] != 13 { end += 1 }
        return String(decoding: UnsafeRawBufferPointer(rebasing: head[from..<end]), as: UTF8.self)
    }

    /// Where `needle` starts in `haystack`, if it is there.
    static func find(_ needle: [UInt8], in haystack: UnsafeRawBufferPointer) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        var i = 0
        while i <= haystack.count - needle.count {
            if haystack[i] == needle[0] {
                var j = 1
                while j < needle.count, haystack[i + j] == needle[j] { j += 1 }
                if j == needle.count { return i }
            }
            i += 1
        }
        return nil
    }

    /// The end of a request head (`\r\n\r\n`), just past it, if the bytes hold one.
    static func endOfHead(_ bytes: UnsafeRawBufferPointer) -> Int? {
        find([13, 10, 13, 10], in: bytes).map { $0 + 4 }
    }

    /// How many bytes a whole answer takes when `bytes` start with one: the head and the first
    /// WebSocket frame (its header and payload). Nil while not all of it is there.
    static func answerLength(_ bytes: UnsafeRawBufferPointer) -> Int? {
        guard let head = endOfHead(bytes), bytes.count >= head + 2 else { return nil }
        let short = Int(bytes[head + 1] & 0x7f)
        var length = short
        var header = 2
        if short == 126 {
            guard bytes.count >= head + 4 else { return nil }
            length = Int(bytes[head + 2]) << 8 | Int(bytes[head + 3])
            header = 4
        } else if short == 127 {
            return nil  // not sent by any server measured here
        }
        let total = head + header + length
        return bytes.count >= total ? total : nil
    }
}
