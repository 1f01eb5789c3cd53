import ArgumentParser
import HeraldRuntime

/// What `herald gateway`, `herald device` and `herald up` share: the log's format and the
/// configuration file (docs/configuration.md, docs/operations.md).
struct ServiceOptions: ParsableArguments {
    @Option(
        name: .long,
        help: """
            Log format: text (a line of words) or json (one JSON object a line, the metadata as fields); \
            herald up gives it to its gateways and its device.
            """)
    var logFormat: LogFormat = .text
    @Option(
        name: .long,
        help: ArgumentHelp(
            "A TOML file of settings, the options' long names as keys (also HERALD_CONFIG).",
            discussion: "Every option can also be set by HERALD_<OPTION> (docs/configuration.md).", valueName: "file"))
    var config: String?
    @Flag(name: .long, help: "Print the effective configuration and where each value came from, then exit.")
    var printConfig = false
}
