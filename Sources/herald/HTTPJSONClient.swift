import AsyncHTTPClient
import ArgumentParser
import Foundation
import HeraldCore
import HeraldNIO
import HeraldRuntime
import NIOCore
import NIOSSL

/// A tiny JSON-over-HTTP client for the device API and the admin API: bodies are encoded and
/// answers decoded as the types the caller names (dates in ISO 8601, as both APIs write them).
/// On AsyncHTTPClient rather than Foundation's URLSession, whose Linux implementation would make
/// the binary need libcurl and its forty libraries.
struct HTTPJSONClient {
    let base: String
    var bearer: String?
    /// The CA certificate (PEM file) that signed an `https://` server's certificate: a gateway's
    /// admin API off loopback is served over TLS with the gateway's own CA.
    var ca: String?

    /// A connection that cannot be made fails the command at once: AsyncHTTPClient would otherwise
    /// try again, with a growing pause, until the request's timeout (a minute and a half for a port
    /// nobody listens on), and the person at the terminal would wait for nothing.
    private static var configuration: HTTPClient.Configuration {
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration.timeout.connect = connectTimeout
        return configuration
    }

    /// How long a connection may take to be made.
    private static let connectTimeout: TimeAmount = .seconds(10)

    /// AsyncHTTPClient's error in words: its timeouts by name, a connection's failure by its reason.
    private static func describe(_ error: any Error, timeout: TimeAmount) -> String {
        if let error = error as? HTTPClientError {
            if error == .connectTimeout { return "no connection within \(connectTimeout.secondsText)" }
            if error == .deadlineExceeded { return "no answer within \(timeout.secondsText)" }
        }
        return ConnectFailure.describe(error)
    }

    /// The client for servers the system's CAs vouch for (or plain HTTP), for the whole run.
    private static let common = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)

    /// An error answer: `{"error":{"message":…}}`.
    private struct ErrorAnswer: Decodable {
        struct Detail: Decodable { var message: String? }
        var error: Detail?
    }

    /// Sends a request and returns the status and body; a status of 400 or more throws with the
    /// server's message.
    func send(_ method: String, _ path: String, body: Data? = nil) async throws -> (Int, Data) {
        let (status, data) = try await exchange(method, path, body: body)
        guard status < 400 else {
            let message = (try? JSONDecoder().decode(ErrorAnswer.self, from: data))?.error?.message
            throw CommandFailure(
                "\(method) \(path): HTTP \(status): \(message ?? String(decoding: data, as: UTF8.self))")
        }
        return (status, data)
    }

    /// Sends a request and returns whatever status and body came back; throws when the connection
    /// cannot be made (at once, without trying again) or no answer came within `timeout`.
    func exchange(_ method: String, _ path: String, body: Data? = nil, timeout: TimeAmount = .seconds(120))
        async throws -> (Int, Data)
    {
        guard URL(string: base + path) != nil else { throw ValidationError("bad URL \(base + path)") }
        var request = HTTPClientRequest(url: base + path)
        request.method = .RAW(value: method)
        if let bearer { request.headers.add(name: "authorization", value: "Bearer \(bearer)") }
        if let body {
            request.body = .bytes(ByteBuffer(bytes: body))
            request.headers.add(name: "content-type", value: "application/json")
        }
        let data: Data
        let status: Int
        // The common client trusts the system's CAs; a gateway's own CA needs a client of its own.
        var own: HTTPClient?
        if let ca, base.hasPrefix("https://") {
            var configuration = Self.configuration
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.trustRoots = .file(ca)
            configuration.tlsConfiguration = tls
            own = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        }
        do {
            let response = try await (own ?? Self.common).execute(request, timeout: timeout)
            status = Int(response.status.code)
            data = Data(buffer: try await response.body.collect(upTo: 256 * 1024 * 1024))
            try? await own?.shutdown()
        } catch {
            try? await own?.shutdown()
            throw CommandFailure("\(method) \(base + path): \(Self.describe(error, timeout: timeout))")
        }
        return (status, data)
    }

    /// Sends `body` (when given) as JSON and decodes the answer as `Answer`.
    func call<Answer: Decodable>(
        _ method: String, _ path: String, _ body: (any Encodable)? = nil, as answer: Answer.Type = Answer.self
    ) async throws -> Answer {
        let (_, data) = try await send(method, path, body: try body.map { try Self.encoder.encode($0) })
        do {
            return try Self.decoder.decode(Answer.self, from: data.isEmpty ? Data("null".utf8) : data)
        } catch {
            throw CommandFailure("\(method) \(path): an answer this herald does not understand: \(error)")
        }
    }

    /// Sends `body` (when given) as JSON; the answer's body is not read.
    func perform(_ method: String, _ path: String, _ body: (any Encodable)? = nil) async throws {
        _ = try await send(method, path, body: try body.map { try Self.encoder.encode($0) })
    }

    /// Sends a JSON object body and returns the answer as it came (`nil` when empty), for the
    /// device API's answers that the CLI prints or reads a few fields of.
    func json(_ method: String, _ path: String, _ body: [String: JSONValue]? = nil) async throws -> JSONValue? {
        let (_, data) = try await send(method, path, body: try body.map { try Self.encoder.encode($0) })
        return data.isEmpty ? nil : try JSONValue.parse(data)
    }

    static var encoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = .sortedKeys
        return encoder
    }

    static var decoder: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let text = try decoder.singleValueContainer().decode(String.self)
            for style in [
                Date.ISO8601FormatStyle(), Date.ISO8601FormatStyle(includingFractionalSeconds: true),
            ] {
                if let date = try? style.parse(text) { return date }
            }
            throw DecodingError.dataCorrupted(
                .init(codingPath: decoder.codingPath, debugDescription: "'\(text)' is not an ISO 8601 date"))
        }
        return decoder
    }
}
