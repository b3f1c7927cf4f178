import AppStore
import Fleet
import FleetConfiguration
import JobQueue
import Observability
import Operations
import ProcessRoot
import TestSupport
import Testing

/// What each role runs, in the order that makes its shutdown safe (the group stops the last first).
@Suite struct ProcessRootTests {
    let settings: FleetSettings

    init() throws {
        settings = try FleetSettings.forTest(
            redisURL: TestServers.redisURL, postgresURL: TestServers.postgresURL, rateLimit: try RateLimit(perSecond: 1, burst: 1))
    }

    func names(_ role: ProcessRoot.Role, _ settings: FleetSettings) -> [String] {
        ProcessRoot.services(for: role, settings: settings, metrics: ProcessMetrics(), logger: quietLogger).map { "\($0)" }
    }

    /// The heartbeat and the reclaimer stop first, then the processors drain while their leases are
    /// still renewed and the metrics still served, and their last timings are reported after; each service is named, never described by its settings.
    @Test func aWorkerDrainsItsProcessorsBeforeItsLeasesAndMetricsStop() {
        #expect(names(.worker(withRelay: false), settings) == [
            "MetricsServer", "LeaseKeeper", "Promoter", "ConsumerCleanup", "TimingsReporter", "Processors", "Reclaimer", "Heartbeat",
        ])
        #expect(names(.worker(withRelay: true), settings) == [
            "MetricsServer", "LeaseKeeper", "Promoter", "ConsumerCleanup", "OutboxRelayService", "WebhookDispatchers",
            "TimingsReporter", "Processors", "Reclaimer", "Heartbeat",
        ])
        #expect(names(.relay, settings) == ["MetricsServer", "OutboxRelayService", "WebhookDispatchers"])
    }

    /// Only a worker with a Server API key answers refund requests (issue 30, part 3): it stops
    /// first, so that no answer is cut off by the processors' drain.
    @Test func aWorkerWithAServerAPIKeyAnswersRefundRequests() throws {
        #expect(!names(.worker(withRelay: false), settings).contains("ConsumptionAnswering"), "no key: nothing to answer with")
        var settings = settings
        settings.serverAPI = ServerAPISettings(
            key: try ServerAPIKey(
                issuerID: "issuer", keyID: "SIMKEY", bundleID: "com.receiptfleet.demo", pem: SimulatedServerAPI.privateKey.pemRepresentation),
            signatures: SignedPayloadVerifier(trustedRoots: []))
        #expect(names(.worker(withRelay: false), settings) == [
            "MetricsServer", "LeaseKeeper", "Promoter", "ConsumerCleanup", "TimingsReporter", "Processors", "Reclaimer", "Heartbeat", "ConsumptionAnswering",
        ])
        #expect(!names(.relay, settings).contains("ConsumptionAnswering"))
    }

    @Test func withoutAMetricsAddressNoMetricsServerRuns() throws {
        var settings = settings
        settings.metricsAddress = try MetricsAddress.parse("off")
        #expect(names(.relay, settings) == ["OutboxRelayService", "WebhookDispatchers"])
    }
}
