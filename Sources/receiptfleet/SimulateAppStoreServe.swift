import AppStoreSimulator
import ArgumentParser
import Demo
import Logging
import ProcessRoot

extension SimulateAppStore {
    /// `receiptfleet simulate-appstore serve`
    struct Serve: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Serve verifyReceipt (production and sandbox) with fault knobs and a movable clock.",
            discussion: """
                POST /verifyReceipt and /sandbox/verifyReceipt answer as Apple does. GET /stats reports \
                load, statuses and rate-limit violations. While it runs, POST /control/clock, \
                /control/outage, /control/knobs, /control/notifications and /control/reset-stats steer it \
                (JSON bodies such as {"advance_seconds": 2592000}, {"seconds": 30}, {"garbage_rate": 0.1}, \
                {"url": "http://127.0.0.1:8080/v1/notifications/apple", "drop": false}).

                Examples:
                  receiptfleet simulate-appstore serve
                  receiptfleet simulate-appstore serve --port 9180 --latency 150ms±50ms --unavailable-rate 0.02
                  receiptfleet simulate-appstore serve --start 2026-11-20T09:00:00Z --rate-limit 50 --shared-secret s3cr3t
                  receiptfleet simulate-appstore serve --server-api-key AuthKey_SIM.p8 --fleet-seed 7 --start 2026-11-20T09:00:00Z

                With --server-api-key it also serves the App Store Server API (GET /inApps/v1/subscriptions/{id}, \
                /inApps/v2/history/{id} and, with --fleet-size, POST /inApps/v1/notifications/history; under \
                /sandbox for the sandbox) for the fleet that \
                `simulate-appstore seed --seed N --at T` drew: tokens signed with that key are accepted, and \
                its answers are signed with the simulator's own root (`seed --server-api-root` writes it).
                """)

        @Option(help: "Address to listen on.") var host = "127.0.0.1"
        @Option(help: "Port to listen on (0 picks a free one).") var port = 9180
        @Option(help: "Where the simulator's clock starts: now or ISO 8601.") var start = "now"
        @Option(help: "Response delay, uniform in mean±spread: 150ms±50ms, 0ms, 2s.") var latency = "0ms"
        @Option(help: "Probability of status 21005 (service unavailable).") var unavailableRate = 0.0
        @Option(name: .customLong("http-503-rate"), help: "Probability of an HTTP 503 HTML page.")
        var http503Rate = 0.0
        @Option(help: "Probability of a garbage body (HTML 502, truncated JSON, wrong types).") var garbageRate = 0.0
        @Option(help: "Share of receipts answered with garbage (HTTP 200, half a body) every time: their jobs end dead.")
        var garbageReceiptShare = 0.0
        @Option(help: "Probability that the connection is closed without an answer.") var dropRate = 0.0
        @Option(help: "Probability that the answer stops halfway with a TCP reset.") var resetRate = 0.0
        @Option(help: "Shared secret to require as `password` (21004 otherwise); omit to accept any.")
        var sharedSecret: String?
        @Option(help: "Requests allowed in any one-second window; more are counted as violations (the Server API answers them 429).")
        var rateLimit: Int?
        @Option(help: "Begin with an outage (21005) lasting this many seconds.") var outageSeconds = 0.0
        @Option(help: "Print statistics every this many seconds (0: never).") var statsInterval = 10.0
        @Option(help: "Serve the App Store Server API, accepting tokens of this In-App Purchase key (.p8).")
        var serverAPIKey: String?
        @Option(help: "With --server-api-key: the seed the fleet was drawn from (seed's --seed); again for the second app's (seed's --bundle-id com.receiptfleet.journal).")
        var fleetSeed: [UInt64] = []
        @Option(help: "With --server-api-key: the time the fleet is centred on (seed's --at); --start by default.")
        var fleetAt: String?
        @Option(help: "With --server-api-key: how many receipts the app's fleet holds (seed's --count), once per --fleet-seed; the V2 notifications their lifecycles send make the notification history (none: no history).")
        var fleetSize: [Int] = []

        /// The Server API's set-up, when asked for.
        func serverAPI() throws -> ServerAPISimulation? {
            guard let serverAPIKey else { return nil }
            guard (1...Catalog.bundleIDs.count).contains(fleetSeed.count) else {
                throw ValidationError("--server-api-key needs --fleet-seed, once per app (at most \(Catalog.bundleIDs.count)): "
                                      + "the seed each app's subscriptions were drawn with.")
            }
            let key = try SimulatedServerAPIFiles.readKey(from: serverAPIKey)
            guard fleetSize.allSatisfy({ $0 >= 0 }), fleetSize.count <= fleetSeed.count else {
                throw ValidationError("--fleet-size must be 0 or more, at most once per --fleet-seed.")
            }
            return ServerAPISimulation(
                publicKey: key.publicKey, seeds: fleetSeed, anchorMs: try parseTime(fleetAt ?? start), subscriptions: fleetSize)
        }

        func run() async throws {
            guard let latency = Latency(parsing: latency) else {
                throw ValidationError("--latency must look like 150ms±50ms, 0ms or 2s.")
            }
            let knobs = FaultKnobs(
                latency: latency, unavailableRate: unavailableRate, serviceUnavailableRate: http503Rate,
                garbageRate: garbageRate, garbageReceiptShare: garbageReceiptShare, dropRate: dropRate, resetRate: resetRate,
                sharedSecret: sharedSecret, rateLimit: rateLimit)
            let clock = SimulatorClock(startMs: try parseTime(start))
            let simulator: SimulatedAppStore
            do {
                simulator = try SimulatedAppStore(knobs: knobs, clock: clock, serverAPI: try serverAPI())
            } catch let error as KnobsError {
                throw ValidationError(error.description)
            }
            if outageSeconds > 0 { simulator.startOutage(seconds: outageSeconds) }
            try await ProcessRoot.run(
                simulator.services(host: host, port: port, statsInterval: .seconds(statsInterval), say: log), logger: Logger(label: "simulate-appstore"))
            log("App Store simulator stopped")
        }
    }
}
