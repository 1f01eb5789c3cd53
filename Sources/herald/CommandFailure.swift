/// A command that could not do its work although its command line was right: a server that cannot
/// be reached or refused, a device that said no. argument-parser prints it as `Error: …` and exits
/// with status 1, without the usage that a `ValidationError` (a mistake on the command line) gets.
struct CommandFailure: Error, CustomStringConvertible {
    let description: String

    init(_ description: String) { self.description = description }
}
