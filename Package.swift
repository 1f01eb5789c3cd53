// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "Herald",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "HeraldCore", targets: ["HeraldCore"]),
        .library(name: "HeraldRuntime", targets: ["HeraldRuntime"]),
        .library(name: "HeraldDevice", targets: ["HeraldDevice"]),
        .library(name: "HeraldGateway", targets: ["HeraldGateway"]),
        .library(name: "HeraldKit", targets: ["HeraldKit"]),
        .library(name: "HeraldProvider", targets: ["HeraldProvider"]),
        .library(name: "HeraldTesting", targets: ["HeraldTesting"]),
        .executable(name: "herald", targets: ["herald"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.7.0"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.0.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.80.0"),
        .package(url: "https://github.com/apple/swift-nio-http2.git", from: "1.36.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.29.0"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.24.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", "3.0.0"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.3.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.5.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.0.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.5.0"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.0.0"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.25.0"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.0"),
        .package(url: "https://github.com/apple/swift-collections.git", from: "1.1.0"),
        // The configuration file of gateway, device and up (TOML).
        .package(url: "https://github.com/LebJe/TOMLKit.git", from: "0.6.0"),
    ],
    targets: [
        .target(
            name: "HeraldCore",
            // swift-crypto signs provider tokens (the provider client and the gateway's console).
            dependencies: [.product(name: "Crypto", package: "swift-crypto")]
        ),
        // What every Herald process that listens shares: the first-bytes and idle deadlines, protocol
        // detection, the guarded Hummingbird HTTP/1.1 server, the state-directory lock, the boot
        // sequence (one ServiceGroup).
        // NIO pieces the gateway and the provider client share: HTTP/2 client connections on
        // swift-nio-http2's frames (the provider client's transport and a gateway's forwarding), writes
        // gathered before TLS, one flush per turn of a loop.
        .target(
            name: "HeraldNIO",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
            ]
        ),
        .target(
            name: "HeraldRuntime",
            dependencies: [
                "HeraldCore",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ]
        ),
        .target(
            name: "HeraldDevice",
            dependencies: [
                "HeraldCore",
                "HeraldRuntime",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOExtras", package: "swift-nio-extras"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            // The web device's page: plain HTML, CSS and JavaScript, served as they are.
            resources: [.copy("API/Web")]
        ),
        .target(
            name: "HeraldKit",
            dependencies: [
                "HeraldCore",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOExtras", package: "swift-nio-extras"),
            ]
        ),
        .target(
            name: "HeraldGateway",
            dependencies: [
                "HeraldCore",
                "HeraldRuntime",
                "HeraldNIO",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                // The shared store of many nodes (issue 23): PostgreSQL through PostgresNIO.
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            // The push console's page: plain HTML, CSS and JavaScript, served as they are.
            resources: [.copy("Admin/Console")]
        ),
        .target(
            name: "HeraldProvider",
            dependencies: [
                "HeraldCore",
                "HeraldNIO",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // For tests, ours and a user's: a gateway and devices in one process on free ports, with
        // manual clocks; test keys and tokens. (The calendar comparison with Foundation is HeraldCore's:
        // `herald trigger` uses it too.)
        .target(
            name: "HeraldTesting",
            dependencies: [
                "HeraldCore",
                "HeraldRuntime",
                "HeraldGateway",
                "HeraldDevice",
                "HeraldKit",
                "HeraldProvider",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "herald",
            dependencies: [
                "HeraldCore",
                "HeraldDevice",
                "HeraldGateway",
                "HeraldProvider",
                "HeraldKit",
                "HeraldNIO",
                "HeraldRuntime",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "TOMLKit", package: "TOMLKit"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        // Examples: apps on HeraldKit (and a provider on HeraldProvider), each run against a real daemon
        // by the end-to-end tests in heraldTests.
        .executableTarget(name: "RemindMe", dependencies: ["HeraldKit"], path: "Examples/RemindMe"),
        .executableTarget(name: "MoodTracker", dependencies: ["HeraldKit"], path: "Examples/MoodTracker"),
        .executableTarget(name: "Invites", dependencies: ["HeraldKit"], path: "Examples/Invites"),
        .executableTarget(name: "Alarm", dependencies: ["HeraldKit"], path: "Examples/Alarm"),
        .executableTarget(name: "Arrival", dependencies: ["HeraldKit"], path: "Examples/Arrival"),
        .executableTarget(name: "DeliveryTracker", dependencies: ["HeraldKit"], path: "Examples/DeliveryTracker"),
        .executableTarget(
            name: "ParcelApp",
            dependencies: ["HeraldKit", .product(name: "AsyncHTTPClient", package: "async-http-client")],
            path: "Examples/ParcelApp"),
        .executableTarget(
            name: "ParcelServer",
            dependencies: ["HeraldProvider", "HeraldRuntime", .product(name: "Hummingbird", package: "hummingbird")],
            path: "Examples/ParcelServer"),
        // Test targets depend on the module they test and on HeraldTesting, which brings the other roles.
        .testTarget(name: "HeraldCoreTests", dependencies: ["HeraldCore", "HeraldTesting"]),
        .testTarget(
            name: "HeraldRuntimeTests",
            dependencies: [
                "HeraldRuntime",
                "HeraldCore",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
            ]
        ),
        .testTarget(
            name: "HeraldDeviceTests",
            dependencies: [
                "HeraldDevice", "HeraldCore", "HeraldTesting",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "HeraldKitTests",
            // HeraldDevice and HeraldCore named, not only re-exported through HeraldTesting: the tests use
            // their types, and without the explicit edge an incremental build kept stale layouts of them.
            dependencies: ["HeraldKit", "HeraldDevice", "HeraldCore", "HeraldTesting"]),
        .testTarget(
            name: "HeraldGatewayTests",
            dependencies: [
                "HeraldGateway", "HeraldTesting", "HeraldNIO",
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        .testTarget(
            name: "HeraldProviderTests",
            // HeraldGateway named, not only re-exported through HeraldTesting: the tests use its
            // types, and without the edge an incremental build ran them against a stale layout of
            // `Gateway` (a crash after a stored property was added).
            dependencies: [
                "HeraldProvider", "HeraldGateway", "HeraldTesting",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "HeraldTestingTests",
            // The modules whose types the tests use, named: through HeraldTesting alone an incremental
            // build ran them against stale layouts of those types.
            dependencies: ["HeraldTesting", "HeraldDevice", "HeraldGateway", "HeraldCore"]
        ),
        .testTarget(
            name: "heraldTests",
            dependencies: [
                "herald", "HeraldTesting",
                .product(name: "Crypto", package: "swift-crypto"),
                "RemindMe", "MoodTracker", "Invites", "Alarm", "Arrival", "DeliveryTracker", "ParcelApp",
                "ParcelServer",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
