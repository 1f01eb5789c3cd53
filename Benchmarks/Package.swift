// swift-tools-version: 6.1
import PackageDescription

// Benchmarks live in their own package (as swift-nio's do) so the main build and CI stay lean.
// Run: swift package --disable-sandbox benchmark   (from this directory)
let package = Package(
    name: "HeraldBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "Herald", path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark.git", from: "1.38.1", traits: ["MallocInterposer"]),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.80.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", "3.0.0"..<"5.0.0"),
    ],
    targets: [
        .executableTarget(
            name: "herald-bench",
            dependencies: [
                .product(name: "HeraldCore", package: "Herald"),
                .product(name: "HeraldDevice", package: "Herald"),
                .product(name: "HeraldTesting", package: "Herald"),
            ],
            path: "Sources/herald-bench"
        ),
        .executableTarget(
            name: "timers-bench",
            dependencies: [
                .product(name: "HeraldRuntime", package: "Herald"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            path: "Sources/timers-bench"
        ),
        .target(name: "CFloor", path: "Sources/CFloor"),
        .executableTarget(
            name: "reconnect-floor",
            dependencies: [
                "CFloor",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HeraldCore", package: "Herald"),
                .product(name: "HeraldDevice", package: "Herald"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
            ],
            path: "Sources/reconnect-floor"
        ),
        .executableTarget(
            name: "CalendarBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "HeraldCore", package: "Herald"),
                .product(name: "HeraldTesting", package: "Herald"),
            ],
            path: "Benchmarks/CalendarBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "SchedulerBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "HeraldDevice", package: "Herald"),
                .product(name: "HeraldTesting", package: "Herald"),
            ],
            path: "Benchmarks/SchedulerBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
