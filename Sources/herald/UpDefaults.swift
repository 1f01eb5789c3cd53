import ArgumentParser
import Foundation
import HeraldRuntime

/// `--up`: the `herald up` state file that `herald push`, `herald channel` and `herald feedback`
/// take their defaults from (server, CA, key, topic, device token).
struct UpOption: ParsableArguments {
    @Option(name: .long, help: "The `herald up` state file to take defaults from.")
    var up = ".herald/up.json"

    /// The defaults `--up` names; none looked for when `useUp` is false (a push to Apple).
    func defaults(useUp: Bool = true) -> UpDefaults {
        guard useUp else { return UpDefaults(path: nil, info: nil, problem: nil) }
        do {
            return UpDefaults(path: up, info: try UpInfo.read(from: up), problem: nil)
        } catch {
            return UpDefaults(path: up, info: nil, problem: "\(error)")
        }
    }
}

/// What `herald up`'s up.json gives a command that was not told, and where it was looked for.
struct UpDefaults {
    /// The file looked at; `nil` when none was (a push to Apple).
    var path: String?
    /// Its contents, when it could be read.
    var info: UpInfo?
    /// Why it could not be read.
    var problem: String?

    /// The error for a missing option: what is missing, and where its default was looked for.
    func missing(_ what: String) -> ValidationError {
        guard let path else { return ValidationError(what) }
        let absolute = URL(fileURLWithPath: path).standardizedFileURL.path
        let why =
            FileManager.default.fileExists(atPath: absolute)
            ? "\(problem ?? "\(absolute) is not usable")"
            : "no \(absolute) from `herald up` (run `herald up` in this directory, or pass --up <file>)"
        return ValidationError("\(what); \(why)")
    }
}
