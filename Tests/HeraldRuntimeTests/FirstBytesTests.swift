import Testing

@testable import HeraldRuntime

struct FirstBytesTests {
    func verdict(_ text: String) -> FirstBytes.Verdict { FirstBytes.classify(Array(text.utf8)) }

    @Test func theWholePrefaceIsHTTP2AndEveryPartOfItWaits() {
        let preface = FirstBytes.http2Preface
        #expect(FirstBytes.classify(preface) == .http2)
        #expect(FirstBytes.classify(preface + [0, 0, 0x12, 4]) == .http2)
        for n in 1..<preface.count {
            #expect(FirstBytes.classify(preface.prefix(n)) == .needMore, "\(n) bytes of the preface")
        }
        #expect(FirstBytes.classify([UInt8]()) == .needMore)
    }

    @Test func requestLinesAreHTTP1() {
        #expect(verdict("POST /3/device/abcd HTTP/1.1\r\nhost: x\r\n\r\n") == .http1)
        #expect(verdict("GET / HTTP/1.0\n") == .http1)
        #expect(verdict("\r\n\r\nGET /healthz HTTP/1.1\r\n") == .http1)
        #expect(verdict("PRIX / HTTP/1.1\r\n") == .http1)  // not the preface, a (strange) method
        // POST and PUT begin like PRI: they are told apart at the second byte and wait for their line.
        #expect(verdict("PO") == .needMore)
        #expect(verdict("POST /3/device/ab") == .needMore)
    }

    @Test func textThatIsNoRequestLineGetsA400() {
        for line in ["HELLO\r\n", "GET / HTTP/2.0\r\n", "GET /\r\n", "GET  / HTTP/1.1\r\n", "get / http/1.1\r\n"] {
            guard case .refuse(_, let badRequest) = verdict(line) else {
                Issue.record("\(line.debugDescription) was not refused")
                continue
            }
            #expect(badRequest, "\(line.debugDescription)")
        }
        guard case .refuse(let reason, true) = verdict("GET / HTTP/2.0\r\n") else { return }
        #expect(reason == #"not an HTTP/1.x request line: "GET / HTTP/2.0""#)
    }

    @Test func bytesThatCannotBecomeALineAreRefusedAtOnceWithoutA400() {
        #expect(
            verdict("\u{16}\u{03}\u{01}")
                == .refuse(
                    reason: "a TLS handshake on a cleartext listener (use http://, or the TLS port)", badRequest: false)
        )
        #expect(
            FirstBytes.classify([0x00])
                == .refuse(
                    reason: "byte 0x00 at offset 0 is not text: not HTTP/1.x, and not the HTTP/2 preface",
                    badRequest: false))
        // Not yet a whole line, but a control byte already rules a request line out.
        #expect(
            FirstBytes.classify(Array("GET /a".utf8) + [0x01])
                == .refuse(
                    reason: "byte 0x01 at offset 6 is not text: not HTTP/1.x, and not the HTTP/2 preface",
                    badRequest: false))
        #expect(
            verdict("{\"aps\":1}")
                == .refuse(
                    reason: "the first byte 0x7b cannot begin a request line", badRequest: false))
    }

    @Test func aLineThatNeverEndsIsRefusedAtTheLimit() {
        let long = Array("GET /".utf8) + [UInt8](repeating: UInt8(ascii: "a"), count: FirstBytes.maximumLine)
        #expect(FirstBytes.classify(long.prefix(FirstBytes.maximumLine)) == .needMore)
        #expect(
            FirstBytes.classify(long)
                == .refuse(
                    reason: "no line end within \(FirstBytes.maximumLine) bytes", badRequest: true))
    }
}

struct LoopbackTests {
    @Test func loopbackIsLocalhost127AndIPv6One() {
        for host in ["localhost", "127.0.0.1", "127.1.2.3", "::1", "[::1]", "::ffff:127.0.0.1"] {
            #expect(Loopback.contains(host), "\(host)")
        }
        for host in ["0.0.0.0", "::", "10.0.0.1", "192.168.1.2", "example.com", "::ffff:10.0.0.1", "1127.0.0.1"] {
            #expect(!Loopback.contains(host), "\(host)")
        }
    }
}
