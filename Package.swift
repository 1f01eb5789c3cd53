// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "Herald",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "HeraldCore", targets: ["HeraldCore"]),
        .library(name: "HeraldDevice", targets: ["HeraldDevice"]),
        .executable(name: "herald", targets: ["herald"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.5.0"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.0.0"),
    ],
    targets: [
        .target(name: "HeraldCore"),
        .target(
            name: "HeraldDevice",
            dependencies: [
                "HeraldCore",
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        .executableTarget(
            name: "herald",
            dependencies: [
                "HeraldCore",
                "HeraldDevice",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .testTarget(name: "HeraldCoreTests", dependencies: ["HeraldCore"]),
        .testTarget(name: "HeraldDeviceTests", dependencies: ["HeraldDevice", "HeraldCore"]),
        .testTarget(name: "heraldTests", dependencies: ["herald"]),
    ],
    swiftLanguageModes: [.v6]
)
