import Foundation
import Hummingbird
import NIOCore

/// A page's files (plain HTML, CSS and JavaScript) from a SwiftPM resource bundle, served as they are:
/// the web device's and the push console's.
public struct WebResources: Sendable {
    /// What each file is served as, by extension.
    public static let types = [
        "html": "text/html; charset=utf-8", "css": "text/css", "js": "text/javascript", "svg": "image/svg+xml",
    ]

    /// The resource bundle's name (`Herald_HeraldDevice`).
    public let bundle: String
    /// The folder inside it.
    public let folder: String
    /// Where the files are, when found: the resource bundle beside the executable (or the test bundle).
    public let directory: URL?

    /// The files of `folder` in the resource bundle `bundle`.
    public init(bundle: String, folder: String) {
        self.bundle = bundle
        self.folder = folder
        var candidates = [Bundle.main.bundleURL, Bundle.main.executableURL?.deletingLastPathComponent()]
        candidates.append(URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent())
        directory = candidates.compactMap { $0 }.map { $0.appendingPathComponent("\(bundle).resources/\(folder)") }
            .first { FileManager.default.fileExists(atPath: $0.appendingPathComponent("index.html").path) }
    }

    /// The file `name` (no paths), or 404 naming what is missing.
    public func response(_ name: String) throws -> Response {
        guard let type = Self.types[(name as NSString).pathExtension], !name.contains("/"), !name.hasPrefix(".") else {
            throw HTTPError(.notFound, message: "no such file: \(name)")
        }
        guard let directory else {
            throw HTTPError(
                .notFound, message: "the page's files (\(bundle).resources) are not beside the herald executable")
        }
        guard let data = FileManager.default.contents(atPath: directory.appendingPathComponent(name).path) else {
            throw HTTPError(.notFound, message: "no such file: \(name)")
        }
        return Response(
            status: .ok, headers: [.contentType: type, .cacheControl: "no-cache"],
            body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}
