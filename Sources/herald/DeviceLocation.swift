import ArgumentParser
import Foundation

/// Where to find a running device: its state directory or its API URL.
struct DeviceLocation: ParsableArguments {
    @Option(name: .customLong("device-state"), help: "The device's state directory (default .herald/device).")
    var state: String?
    @Option(name: .long, help: "The device API's URL (overrides device.json).")
    var apiURL: String?

    func client() throws -> HTTPJSONClient { HTTPJSONClient(base: try deviceAPIURL(state: state, url: apiURL)) }

    /// `90`, `90s`, `15m`, `2h`, `1d` as seconds.
    static func seconds(_ text: String) -> Double? {
        let units: [Character: Double] = ["s": 1, "m": 60, "h": 3600, "d": 86400]
        guard let last = text.last else { return nil }
        let (number, unit) = units[last].map { (text.dropLast(), $0) } ?? (Substring(text), 1)
        guard let value = Double(number), value >= 0, value.isFinite else { return nil }
        return value * unit
    }
}
