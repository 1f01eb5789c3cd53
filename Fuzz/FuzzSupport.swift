// Compiled into every libFuzzer target by scripts/fuzz.sh; not part of the package.

/// Stops with `message` when `condition` fails (fatalError prints its message in an optimized
/// build, where precondition would not).
func check(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError(message()) }
}

/// Stops with `message`.
func failure(_ message: String) -> Never { fatalError(message) }
