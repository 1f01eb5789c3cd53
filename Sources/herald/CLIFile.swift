import ArgumentParser
import Foundation

/// Reads the files that options name, with an error that says which option, which file and why
/// ("--p8: cannot read key.p8: no such file or directory"), not Foundation's dump of an `NSError`.
enum CLIFile {
    /// The bytes of `path`, named by `option` (`--p8`, or a description such as "the .apns file").
    static func data(_ path: String, for option: String) throws -> Data {
        do {
            return try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw ValidationError("\(option): cannot read \(path): \(why(error, reading: path))")
        }
    }

    /// The text of `path`, which must be UTF-8; a byte order mark before it is dropped (an editor
    /// may write one; PEM readers and tokens do not expect it).
    static func text(_ path: String, for option: String) throws -> String {
        var bytes = try data(path, for: option)
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes.removeFirst(3) }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw ValidationError("\(option): \(path) is not UTF-8 text")
        }
        return text
    }

    /// Why `path` could not be read ("no such file or directory", "is a directory", "permission
    /// denied"), else Foundation's description of `error` (on Linux its errors name no cause).
    static func why(_ error: any Error, reading path: String) -> String {
        var isDirectory: ObjCBool = false
        let files = FileManager.default
        if !files.fileExists(atPath: path, isDirectory: &isDirectory) { return "no such file or directory" }
        if isDirectory.boolValue { return "is a directory" }
        if !files.isReadableFile(atPath: path) { return "permission denied" }
        return error.localizedDescription
    }
}
