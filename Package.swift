// swift-tools-version: 6.1
import PackageDescription

// Layers: docs/architecture.md lists every target, bottom first, and a target imports only targets
// listed before it. Each target declares every module it imports, directly (not through another
// target's dependencies). scripts/check-layering checks both, and scripts/test runs it first.
let package = Package(
    name: "ReceiptFleet",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "receiptfleet", targets: ["receiptfleet"]),
        .library(name: "RedisClient", targets: ["RedisClient"]),
        .library(name: "HTTPClient", targets: ["HTTPClient"]),
        .library(name: "PostgresClient", targets: ["PostgresClient"]),
        .library(name: "AppStore", targets: ["AppStore"]),
        .library(name: "JobQueue", targets: ["JobQueue"]),
        .library(name: "Ledger", targets: ["Ledger"]),
        .library(name: "EventRelay", targets: ["EventRelay"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.0.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.6.0"),
        // Without the default trait ConfigurationSupport, which would build swift-configuration for
        // nothing: the fleet's settings have their own registry (Sources/FleetConfiguration/Setting.swift).
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.0.0", traits: ["FullFoundation"]),
        .package(url: "https://github.com/x-sheep/swift-property-based.git", from: "2.0.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.80.0"),
        // Hummingbird's own: the request parts a server's channel handlers see (the console's and
        // the API's request deadline).
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.34.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.6.0"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.0.0"),
        .package(url: "https://github.com/hummingbird-project/swift-mustache.git", from: "2.0.0"),
    ],
    targets: [
        // C libraries, found through pkg-config; the apt names tell SwiftPM what to suggest.
        .systemLibrary(name: "CHiredis", pkgConfig: "hiredis", providers: [.apt(["libhiredis-dev"])]),
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(name: "CLibpq", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
        .target(name: "CCurlShim", dependencies: ["CCurl"]),

        // Thin clients: no product words.
        // Dedicated threads for blocking C I/O: lanes for async callers, thread services for a process's loops.
        .target(name: "Lanes", dependencies: [
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "UnixSignals", package: "swift-service-lifecycle"),
        ]),
        // Masks the secrets in URLs and conninfo strings, for both clients and every command.
        .target(name: "Redaction"),
        // What the binary is (version, commit, build date), stamped at each build by the BuildStamp plugin.
        .target(name: "BuildInfo", plugins: ["BuildStamp"]),
        .plugin(name: "BuildStamp", capability: .buildTool()),
        // One line of progress on a terminal, redrawn in place: the CLI's long commands and the demo.
        .target(name: "Terminal"),
        // Named secret tokens compared in constant time: the API's bearer tokens, the console's operator tokens.
        .target(name: "AccessTokens", dependencies: [.product(name: "Crypto", package: "swift-crypto")]),
        .target(name: "RedisClient", dependencies: ["CHiredis", "Redaction"]),
        .target(name: "HTTPClient", dependencies: ["CCurl", "CCurlShim"]),
        .target(name: "PostgresClient", dependencies: ["CLibpq", "Redaction"]),

        // Domain.
        // Apple's vocabulary, parsing, analysis and events: pure, no I/O (the ledger links no libcurl).
        .target(name: "AppStore", dependencies: [
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "X509", package: "swift-certificates"),
        ]),
        // The clients that ask Apple.
        .target(name: "AppStoreClients", dependencies: ["AppStore", "HTTPClient"]),
        .target(name: "JobQueue", dependencies: ["RedisClient"]),
        .target(name: "Ledger", dependencies: ["PostgresClient", "AppStore"]),
        .target(name: "EventRelay", dependencies: [
            "AppStore", "Lanes",
            "PostgresClient", "RedisClient", "HTTPClient", "Redaction",
            .product(name: "Crypto", package: "swift-crypto"),
        ]),

        // The verification use case: its ports (the gate, Apple, the store), the Ledger's adapter, and
        // what it reads of the settings; apart from the fleet's runtime, which provides the other adapters.
        .target(name: "VerificationUseCase", dependencies: [
            "AppStore", "JobQueue", "Lanes", "Ledger",
            .product(name: "Logging", package: "swift-log"),
        ]),

        // Every setting, declared once (SettingsRegistry), resolved through flag, environment, file
        // and default, and the typed settings the fleet, the API and the console read from it.
        .target(name: "FleetConfiguration", dependencies: [
            "AccessTokens", "AppStore", "AppStoreClients", "EventRelay", "JobQueue", "Ledger", "PostgresClient", "Redaction",
            "RedisClient", "VerificationUseCase",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "X509", package: "swift-certificates"),
        ]),

        // The settings as the command line's flags (swift-argument-parser), each named after its setting.
        .target(name: "FleetFlags", dependencies: [
            "AppStore", "FleetConfiguration",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ]),

        // Fleet: the processes people run, made of the domain.
        .target(name: "Fleet", dependencies: [
            "AppStore", "AppStoreClients", "BuildInfo", "EventRelay", "FleetConfiguration", "JobQueue", "Lanes", "Ledger",
            "HTTPClient",
            "PostgresClient", "RedisClient", "VerificationUseCase",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "Metrics", package: "swift-metrics"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        ]),
        // What operators do beside the runtime: renewal extensions, order lookups, refund answers,
        // and the one reading of the fleet's status (status, the console, the gauges).
        .target(name: "Operations", dependencies: [
            "AccessTokens", "AppStore", "AppStoreClients", "EventRelay", "Fleet", "FleetConfiguration", "JobQueue", "Lanes", "Ledger",
            "PostgresClient", "Redaction",
            "RedisClient",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "Metrics", package: "swift-metrics"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        ]),
        // The metrics server of every fleet process; keeps Hummingbird and Prometheus out of Fleet.
        .target(name: "Observability", dependencies: [
            "Fleet", "FleetConfiguration", "Lanes", "Operations",
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "Metrics", package: "swift-metrics"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "Prometheus", package: "swift-prometheus"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        ]),

        // The ops console: one web page of the queue, Apple, dead letters, subscriptions and webhooks
        // (under /console in receiptfleet serve, or alone in receiptfleet console).
        .target(name: "Console", dependencies: [
            "AccessTokens", "AppStore", "EventRelay", "Fleet", "FleetConfiguration", "JobQueue", "Lanes", "Ledger", "Operations",
            "PostgresClient", "Redaction", "RedisClient",
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "HummingbirdCore", package: "hummingbird"),
            .product(name: "HTTPTypes", package: "swift-http-types"),
            .product(name: "Mustache", package: "swift-mustache"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        ]),

        // The HTTP API: registration, state, App Store Server Notifications (receiptfleet serve).
        .target(name: "APIService", dependencies: [
            "AccessTokens", "AppStore", "AppStoreClients", "Console", "Fleet", "FleetConfiguration", "JobQueue", "Lanes", "Ledger",
            "PostgresClient", "RedisClient", "VerificationUseCase",
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "HTTPTypes", package: "swift-http-types"),
            .product(name: "X509", package: "swift-certificates"),
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "Metrics", package: "swift-metrics"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        ]),

        // The composition root: each long-running process's services, by role, in one ServiceGroup.
        .target(name: "ProcessRoot", dependencies: [
            "APIService", "Console", "Fleet", "FleetConfiguration", "Operations", "Lanes", "Observability",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        ]),

        // The one stand-in: Apple's verifyReceipt, for tests, the demo and benchmarks.
        .target(name: "AppStoreSimulator", dependencies: [
            "HTTPClient", "Lanes",
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "X509", package: "swift-certificates"),
        ]),

        // The demo (receiptfleet demo, scripts/demo, scripts/faults): the whole fleet on this machine
        // against the simulator, two nights, checked against its ground truth.
        .target(name: "Demo", dependencies: [
            "AppStore", "AppStoreClients", "AppStoreSimulator", "EventRelay", "Fleet", "FleetConfiguration", "Operations",
            "HTTPClient", "JobQueue",
            "Lanes", "Ledger", "PostgresClient", "ProcessRoot", "RedisClient", "Terminal",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "Logging", package: "swift-log"),
        ]),

        // Executables.
        .executableTarget(name: "receiptfleet", dependencies: [
            "AccessTokens", "APIService", "Console", "AppStore", "BuildInfo", "AppStoreClients", "AppStoreSimulator", "Demo",
            "EventRelay",
            "Fleet", "FleetConfiguration", "FleetFlags", "HTTPClient", "JobQueue", "Lanes",
            "Ledger", "Observability", "Operations", "PostgresClient", "ProcessRoot", "Redaction", "RedisClient", "Terminal",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "X509", package: "swift-certificates"),
        ]),
        .executableTarget(name: "queue-benchmark", dependencies: ["JobQueue", "RedisClient"], path: "Sources/QueueBenchmark"),
        .executableTarget(name: "ledger-benchmark", dependencies: ["Lanes", "Ledger", "PostgresClient", "AppStore", "EventRelay", "RedisClient"], path: "Sources/LedgerBenchmark"),

        // Tests: real servers, addresses from the environment (scripts/services prints them).
        .target(name: "TestSupport", dependencies: [
            "AppStore", "AppStoreClients", "AppStoreSimulator", "EventRelay", "Fleet", "FleetConfiguration", "JobQueue",
            "Lanes", "Ledger",
            "Observability", "PostgresClient", "ProcessRoot", "RedisClient",
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "X509", package: "swift-certificates"),
        ], path: "Tests/TestSupport"),
        .testTarget(name: "LanesTests", dependencies: [
            "Lanes", "TestSupport",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        ]),
        .testTarget(name: "RedactionTests", dependencies: [
            "Redaction",
            .product(name: "PropertyBased", package: "swift-property-based"),
        ]),
        .testTarget(name: "RedisClientTests", dependencies: ["RedisClient", "TestSupport"]),
        .testTarget(name: "HTTPClientTests", dependencies: ["CCurl", "HTTPClient", "TestSupport"]),
        .testTarget(name: "PostgresClientTests", dependencies: ["CLibpq", "PostgresClient", "Redaction", "TestSupport"]),
        .testTarget(
            name: "EventRelayTests",
            dependencies: ["EventRelay", "Lanes", "Ledger", "PostgresClient", "RedisClient", "TestSupport"]
        ),
        .testTarget(
            name: "AppStoreTests",
            dependencies: [
                "AppStore", "AppStoreSimulator", "TestSupport",
                .product(name: "PropertyBased", package: "swift-property-based"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            resources: [.copy("Fixtures")]
        ),
        .testTarget(name: "AppStoreClientTests", dependencies: [
            "AppStore", "AppStoreClients", "AppStoreSimulator", "HTTPClient", "TestSupport",
            .product(name: "Crypto", package: "swift-crypto"),
        ]),
        .testTarget(name: "JobQueueTests", dependencies: ["JobQueue", "RedisClient", "TestSupport"]),
        .testTarget(name: "LedgerTests", dependencies: ["AppStore", "Ledger", "PostgresClient", "TestSupport"]),
        .testTarget(name: "FleetTests", dependencies: [
            "AppStore", "AppStoreClients", "AppStoreSimulator", "Fleet", "FleetConfiguration", "Operations", "JobQueue",
            "Lanes", "Ledger", "Observability",
            "PostgresClient", "RedisClient", "TestSupport", "VerificationUseCase",
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        // Deployment files (dashboards/, deploy/, Dockerfile), checked with promtool, systemd-analyze and
        // schema validators that scripts/bootstrap installs.
        .testTarget(name: "DeployTests", dependencies: ["BuildInfo", "JobQueue", "RedisClient", "TestSupport"]),
        .testTarget(name: "ObservabilityTests", dependencies: [
            "AppStore", "BuildInfo", "AppStoreSimulator", "EventRelay", "Fleet", "FleetConfiguration", "Operations",
            "HTTPClient", "JobQueue", "Ledger",
            "Observability", "PostgresClient", "ProcessRoot", "RedisClient", "Terminal", "TestSupport",
            .product(name: "Logging", package: "swift-log"),
        ]),
        .testTarget(name: "APIServiceTests", dependencies: [
            "AccessTokens", "APIService", "AppStore", "AppStoreSimulator", "Console", "Fleet", "FleetConfiguration",
            "Operations", "HTTPClient", "JobQueue", "Lanes",
            "Ledger", "PostgresClient", "RedisClient", "TestSupport",
            .product(name: "X509", package: "swift-certificates"),
            .product(name: "MetricsTestKit", package: "swift-metrics"),
            .product(name: "Logging", package: "swift-log"),
        ], resources: [.copy("Fixtures")]),
        // The console over HTTP, and in Debian's chromium driven by Selenium (scripts/bootstrap installs both).
        .testTarget(name: "ConsoleTests", dependencies: [
            "AccessTokens", "AppStore", "AppStoreSimulator", "Console", "EventRelay", "Fleet", "FleetConfiguration",
            "Operations", "HTTPClient", "JobQueue",
            "Ledger", "PostgresClient", "RedisClient", "TestSupport",
            .product(name: "Logging", package: "swift-log"),
        ]),
        .testTarget(name: "AppStoreSimulatorTests", dependencies: [
            "AppStore", "AppStoreSimulator", "HTTPClient", "TestSupport",
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "HTTPTypes", package: "swift-http-types"),
            .product(name: "NIOCore", package: "swift-nio"),
        ]),
    ],
    swiftLanguageModes: [.v6]
)
