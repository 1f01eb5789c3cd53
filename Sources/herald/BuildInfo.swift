/// What this binary is: `herald --version`. A build from a clone says `development`;
/// `scripts/release.sh` writes the release's version and commit here before it builds, and puts
/// this file back afterwards.
enum BuildInfo {
    /// The release, such as `1.2.0`.
    static let version = "development"
    /// The commit the binary was built from (`-dirty` when the tree had changes).
    static let commit = "unknown"

    /// `1.2.0 (commit 3f2a9c1d0b7e)`.
    static var description: String { "\(version) (commit \(commit))" }
}
