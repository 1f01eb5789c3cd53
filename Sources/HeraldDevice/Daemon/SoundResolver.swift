import Foundation

/// The sound that will actually play.
public enum ResolvedSound: Sendable, Hashable {
    /// The system's default sound.
    case `default`
    /// A usable custom sound file.
    case file(path: String, duration: Double)
}

/// What a sound file's header says.
public struct SoundFileInfo: Sendable, Hashable {
    /// `aiff`, `wav` or `caf`.
    public var container: String
    /// `lpcm`, `ima4`, `ulaw` or `alaw`, or the file's own code when it is none of them.
    public var encoding: String
    public var duration: Double

    /// Whether the system plays it: an allowed encoding and shorter than 30 seconds.
    public var isPlayable: Bool { SoundResolver.allowedEncodings.contains(encoding) && duration < 30 }
}

/// Finds a named sound in the app's `Library/Sounds`, then its bundle directory, and checks from the file's
/// header that it is aiff, wav or caf, linear PCM, IMA4, µ-law or a-law, and shorter than 30 s. Anything
/// else plays the default sound.
public enum SoundResolver {
    static let allowedEncodings: Set<String> = ["lpcm", "ima4", "ulaw", "alaw"]

    /// The sound to play for `name`.
    public static func resolve(_ name: String, libraryDirectory: String?, bundleDirectory: String?) -> ResolvedSound {
        resolution(name, libraryDirectory: libraryDirectory, bundleDirectory: bundleDirectory).sound
    }

    /// The sound to play for `name`, and when it is the default instead of the named file, why.
    public static func resolution(
        _ name: String, libraryDirectory: String?, bundleDirectory: String?
    ) -> (sound: ResolvedSound, fallback: String?) {
        if name == "default" { return (.default, nil) }
        if name.contains("/") { return (.default, "a sound name cannot contain \"/\"") }
        let candidates = [libraryDirectory.map { "\($0)/Sounds/\(name)" }, bundleDirectory.map { "\($0)/\(name)" }]
        for path in candidates.compactMap({ $0 }) {
            guard let handle = FileHandle(forReadingAtPath: path) else { continue }
            defer { try? handle.close() }
            let header = (try? handle.read(upToCount: 64 * 1024)) ?? Data()
            let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? header.count
            // Found but unusable: the default sound, not a search further on.
            guard let info = inspect(header, fileSize: size) else {
                return (.default, "\(name) is not an aiff, wav or caf file")
            }
            guard allowedEncodings.contains(info.encoding) else {
                return (.default, "\(name) is \(info.encoding), not linear PCM, IMA4, µ-law or a-law")
            }
            guard info.duration < 30 else {
                return (
                    .default,
                    "\(name) lasts \(String(format: "%.1f", info.duration)) s; a sound must be shorter than 30 s"
                )
            }
            return (.file(path: path, duration: info.duration), nil)
        }
        return (.default, "\(name) is in neither Library/Sounds nor the app's bundle")
    }

    /// Reads a sound file's header (the first bytes of the file; `fileSize` is the whole file's size).
    public static func inspect(_ data: Data, fileSize: Int) -> SoundFileInfo? {
        let b = [UInt8](data)
        guard b.count >= 12 else { return nil }
        let tag = String(decoding: b[0..<4], as: UTF8.self)
        if tag == "RIFF", String(decoding: b[8..<12], as: UTF8.self) == "WAVE" { return wav(b, fileSize: fileSize) }
        if tag == "FORM" { return aiff(b) }
        if tag == "caff" { return caf(b, fileSize: fileSize) }
        return nil
    }

    private static func u16le(_ b: [UInt8], _ i: Int) -> Int { Int(b[i]) | Int(b[i + 1]) << 8 }
    private static func u32le(_ b: [UInt8], _ i: Int) -> Int { u16le(b, i) | u16le(b, i + 2) << 16 }
    private static func u16be(_ b: [UInt8], _ i: Int) -> Int { Int(b[i]) << 8 | Int(b[i + 1]) }
    private static func u32be(_ b: [UInt8], _ i: Int) -> Int { u16be(b, i) << 16 | u16be(b, i + 2) }
    private static func u64be(_ b: [UInt8], _ i: Int) -> UInt64 {
        (0..<8).reduce(UInt64(0)) { $0 << 8 | UInt64(b[i + $1]) }
    }

    private static func wav(_ b: [UInt8], fileSize: Int) -> SoundFileInfo? {
        var i = 12
        var format = -1
        var byteRate = 0
        while i + 8 <= b.count {
            let id = String(decoding: b[i..<i + 4], as: UTF8.self)
            let size = u32le(b, i + 4)
            if id == "fmt ", i + 24 <= b.count {
                format = u16le(b, i + 8)
                byteRate = u32le(b, i + 16)
                if format == 0xFFFE, i + 34 <= b.count { format = u16le(b, i + 32) }  // WAVE_FORMAT_EXTENSIBLE
            } else if id == "data" {
                guard format >= 0, byteRate > 0 else { return nil }
                let encoding =
                    switch format {
                    case 1, 3: "lpcm"
                    case 6: "alaw"
                    case 7: "ulaw"
                    case 0x11: "ima4"
                    default: "wav-\(format)"
                    }
                let dataSize = min(size, max(0, fileSize - (i + 8)))
                return SoundFileInfo(
                    container: "wav", encoding: encoding, duration: Double(dataSize) / Double(byteRate))
            }
            i += 8 + size + (size & 1)
        }
        return nil
    }

    private static func aiff(_ b: [UInt8]) -> SoundFileInfo? {
        let form = String(decoding: b[8..<12], as: UTF8.self)
        guard form == "AIFF" || form == "AIFC" else { return nil }
        var i = 12
        while i + 8 <= b.count {
            let id = String(decoding: b[i..<i + 4], as: UTF8.self)
            let size = u32be(b, i + 4)
            if id == "COMM", i + 26 <= b.count {
                let frames = u32be(b, i + 10)
                let rate = extended(b, i + 16)
                var encoding = "lpcm"
                if form == "AIFC", i + 30 <= b.count {
                    let code = String(decoding: b[i + 26..<i + 30], as: UTF8.self)
                    encoding =
                        switch code {
                        case "NONE", "sowt", "twos", "fl32", "fl64", "in24", "in32": "lpcm"
                        case "ima4": "ima4"
                        case "ulaw", "ULAW": "ulaw"
                        case "alaw", "ALAW": "alaw"
                        default: code
                        }
                }
                guard rate > 0 else { return nil }
                return SoundFileInfo(container: "aiff", encoding: encoding, duration: Double(frames) / rate)
            }
            i += 8 + size + (size & 1)
        }
        return nil
    }

    /// IEEE 754 80-bit extended (AIFF sample rate).
    private static func extended(_ b: [UInt8], _ i: Int) -> Double {
        let exponent = (u16be(b, i) & 0x7FFF) - 16383
        let mantissa = u64be(b, i + 2)
        return Double(mantissa) * pow(2, Double(exponent - 63))
    }

    private static func caf(_ b: [UInt8], fileSize: Int) -> SoundFileInfo? {
        var i = 8
        var rate = 0.0
        var format = ""
        var bytesPerPacket = 0
        var framesPerPacket = 0
        var validFrames: Int?
        while i + 12 <= b.count {
            let id = String(decoding: b[i..<i + 4], as: UTF8.self)
            // A size of -1 (all bits set) is CAF's "unknown" for the data chunk; sizes are taken as
            // the signed 64-bit numbers the format defines, and never trusted to fit.
            let size = Int(truncatingIfNeeded: u64be(b, i + 4))
            let body = i + 12
            if id == "desc", body + 32 <= b.count {
                rate = Double(bitPattern: u64be(b, body))
                format = String(decoding: b[body + 8..<body + 12], as: UTF8.self)
                bytesPerPacket = u32be(b, body + 16)
                framesPerPacket = u32be(b, body + 20)
            } else if id == "pakt", body + 16 <= b.count {
                validFrames = Int(exactly: u64be(b, body + 8))
            } else if id == "data" {
                guard rate > 0 else { return nil }
                let dataSize = size < 0 || size > fileSize ? fileSize - body - 4 : size - 4  // 4-byte edit count
                var frames = validFrames ?? 0
                if validFrames == nil, bytesPerPacket > 0, framesPerPacket > 0 {
                    let (product, overflow) = (dataSize / bytesPerPacket).multipliedReportingOverflow(
                        by: framesPerPacket)
                    guard !overflow else { return nil }
                    frames = product
                }
                return SoundFileInfo(container: "caf", encoding: format, duration: Double(frames) / rate)
            }
            guard size >= 0, case (let next, false) = body.addingReportingOverflow(size) else { return nil }
            i = next
        }
        return nil
    }
}

extension DeviceEngine {
    /// The sound a presentation actually plays: a named sound resolved in the app's `Library/Sounds`, then
    /// its bundle directory (the default sound when missing or unusable, with the reason); `nil` when it
    /// is silent.
    public func resolvedSound(for presentation: Presentation) -> (sound: ResolvedSound, fallback: String?)? {
        guard let sound = presentation.sound else { return nil }
        let app = apps[presentation.app]?.app
        switch sound {
        case .default, .critical(name: nil, _):
            return (.default, nil)
        case .named(let name), .critical(name: let name?, _):
            return SoundResolver.resolution(
                name, libraryDirectory: app?.libraryDirectory, bundleDirectory: app?.bundleDirectory)
        }
    }
}
