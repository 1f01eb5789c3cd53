import ArgumentParser
import Foundation
import HeraldCore

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A tiny JSON-over-HTTP client for the device API and the admin API: bodies are encoded and
/// answers decoded as the types the caller names (dates in ISO 8601, as both APIs write them).
struct HTTPJSONClient {
    let base: String
    var bearer: String?

    /// An error answer: `{"error":{"message":…}}`.
    private struct ErrorAnswer: Decodable {
        struct Detail: Decodable { var message: String? }
        var error: Detail?
    }

    /// Sends a request and returns the status and body; a status of 400 or more throws with the
    /// server's message.
    func send(_ method: String, _ path: String, body: Data? = nil) async throws -> (Int, Data) {
        guard let url = URL(string: base + path) else { throw ValidationError("bad URL \(base + path)") }
        var request = URLRequest(url: url)
        request.httpMethod = method
        if let bearer { request.setValue("Bearer \(bearer)", forHTTPHeaderField: "authorization") }
        if let body {
            request.httpBody = body
            request.setValue("application/json", forHTTPHeaderField: "content-type")
        }
        let data: Data
        let response: URLResponse
        do {
            (data, response) = try await URLSession.shared.data(for: request)
        } catch {
            throw ValidationError("\(method) \(base + path): \(error.localizedDescription)")
        }
        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
        guard status < 400 else {
            let message = (try? JSONDecoder().decode(ErrorAnswer.self, from: data))?.error?.message
            throw ValidationError(
                "\(method) \(path): HTTP \(status): \(message ?? String(decoding: data, as: UTF8.self))")
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
            throw ValidationError("\(method) \(path): an answer this herald does not understand: \(error)")
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
