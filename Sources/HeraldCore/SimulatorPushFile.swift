import Foundation

/// An `.apns` file as `xcrun simctl push` reads it: a payload (a JSON object) with one more
/// top-level key, `"Simulator Target Bundle"`, naming the app it is for.
public struct SimulatorPushFile: Sendable, Equatable {
    /// The key that names the app.
    public static let targetKey = "Simulator Target Bundle"

    /// The app the file names, if it names one.
    public var topic: String?
    /// The payload to send: the file's bytes as written when it names no app; otherwise the object
    /// without the target key, serialized again with sorted keys.
    public var payload: Data

    /// Why a file cannot be read.
    public struct FormatError: Error, Equatable, Sendable, CustomStringConvertible {
        /// What is wrong.
        public var description: String
    }

    /// Reads a file's bytes.
    public init(data: Data) throws(FormatError) {
        guard var object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] else {
            throw FormatError(description: "not a JSON object")
        }
        guard let target = object.removeValue(forKey: Self.targetKey) else {
            topic = nil
            payload = data
            return
        }
        guard let name = target as? String, !name.isEmpty else {
            throw FormatError(description: "\"\(Self.targetKey)\" must be a non-empty string")
        }
        topic = name
        do {
            payload = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
        } catch {
            throw FormatError(description: "the payload cannot be written again: \(error)")
        }
    }
}
