import ArgumentParser

// `herald gateway`'s description and its subcommand (`faults`), apart from the command: the
// subcommand names the command as its parent (`@ParentCommand`).
extension GatewayCommand {
    static let configuration = CommandConfiguration(
        commandName: "gateway",
        abstract:
            "Run the push service: the APNs-compatible provider API, the device link, the admin API and the store.",
        discussion: """
            On first start the state directory gets a development CA (ca.pem), a TLS certificate, an \
            admin token (admin-token) and, unless --database names PostgreSQL, the SQLite database; later \
            starts reuse them. Once listening, the gateway writes the addresses to gateway.json in the \
            state directory. `herald gateway faults` sets a running gateway's fault rules. \
            Listening sockets handed over by systemd (a socket unit: LISTEN_FDS, with each socket named \
            by FileDescriptorName= as provider, development, link, binary, feedback, channels or \
            channels-development) are served instead of binding those ports; connections made while the \
            gateway restarts then wait for it instead of being refused.
            """,
        subcommands: [FaultsCommand.self])
}
