import Foundation
import HeraldRuntime
import Logging
import Synchronization
import Testing

@testable import HeraldRuntime

/// `--log-format json`: one JSON object a line, the metadata as fields.
@Suite struct JSONLogHandlerTests {
    /// Lines a handler wrote.
    final class Lines: Sendable {
        let lines = Mutex<[String]>([])
        var all: [String] { lines.withLock { $0 } }
        func add(_ bytes: [UInt8]) { lines.withLock { $0.append(String(decoding: bytes, as: UTF8.self)) } }
    }

    @Test func aLineIsOneObjectWithTheMetadataAsFields() throws {
        let line = JSONLogHandler.line(
            time: (1_795_706_899, 7), level: .notice, label: "herald.gateway",
            message: "a \"quoted\"\nmessage\u{1}",
            metadata: [
                "device": "dev1", "count": .stringConvertible(3), "message": "a clash",
                "nested": .dictionary(["b": .array(["x", "y"]), "a": "1"]),
            ])
        let text = String(decoding: line, as: UTF8.self)
        #expect(text.hasSuffix("}\n"))
        #expect(text.dropLast().contains("\n") == false, "one line: the newline in the message is escaped")
        #expect(
            text
                == #"{"time":"2026-11-26T15:28:19.007Z","level":"notice","label":"herald.gateway","message":"a \"quoted\"\nmessage\u0001","count":"3","device":"dev1","metadata.message":"a clash","nested":{"a":"1","b":["x","y"]}}"#
                + "\n")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line)) as? [String: Any])
        #expect(object["message"] as? String == "a \"quoted\"\nmessage\u{1}")
        #expect((object["nested"] as? [String: Any])?["b"] as? [String] == ["x", "y"])
    }

    @Test func theHandlerMergesItsMetadataTheProvidersAndTheMessages() throws {
        let lines = Lines()
        var logger = Logger(label: "herald.test") { label in
            JSONLogHandler(
                label: label, metadataProvider: .init { ["request": "r1", "node": "from the provider"] },
                sink: { lines.add($0) })
        }
        logger.logLevel = .info
        logger[metadataKey: "node"] = "n1"
        logger.debug("below the level")
        logger.info("stored", metadata: ["device": "dev1", "request": "r2"])
        logger.error("failed", error: CocoaError(.fileNoSuchFile))
        #expect(lines.all.count == 2)
        let stored = try #require(
            try JSONSerialization.jsonObject(with: Data(lines.all[0].utf8)) as? [String: String])
        #expect(stored["level"] == "info")
        #expect(stored["label"] == "herald.test")
        #expect(stored["message"] == "stored")
        #expect(stored["device"] == "dev1")
        #expect(stored["request"] == "r2", "the message's metadata wins")
        #expect(stored["node"] == "from the provider", "the provider's wins over the handler's")
        #expect(stored["time"]?.count == "2026-11-26T12:48:19.007Z".count)
        let failed = try #require(
            try JSONSerialization.jsonObject(with: Data(lines.all[1].utf8)) as? [String: String])
        #expect(failed["level"] == "error")
        #expect(failed["error"]?.isEmpty == false)
    }
}
