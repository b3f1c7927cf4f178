import AppStore
import AppStoreSimulator
import Fleet
import Foundation
import JobQueue
import Logging
import TestSupport
import Testing

/// The fleet under broken connections and TLS: what usually passes is retried and never halts it;
/// what never passes (https to a plain port, a certificate that does not verify) halts it, with an
/// alarm that names the failure and no secret.
@Suite struct TransportFaultTests {
    static var nowMs: Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

    @Test func connectionsDroppedOrResetMidResponseAreRetriedAndNeverHaltTheFleet() async throws {
        let nowMs = Self.nowMs
        let knobs = FaultKnobs(dropRate: 0.15, resetRate: 0.15)
        try await TestDatabase.with { database in
            try await LiveSimulator.with(knobs: knobs, startMs: nowMs) { simulator in
                var setup = try FleetSetup(database: database, simulator: simulator, nowMs: nowMs, receipts: 40)
                // Enough attempts that no job runs out of them by bad luck: this is about halting.
                setup.settings.retryPolicy = try RetryPolicy(base: .milliseconds(50), cap: .milliseconds(200), maxAttempts: 30)
                _ = try await setup.load()
                let final = try await setup.work()
                #expect(final.queue.haltedReason == nil)
                #expect(final.queue.dead == 0)
                let stats = simulator.store.statistics
                #expect(stats.droppedConnections > 0 && stats.resetResponses > 0, "\(stats)")
                let retried = try await setup.count("SELECT count(*) AS n FROM verifications WHERE error LIKE '%(connectionReset, curl error%'")
                #expect(retried > 0, "the broken connections reached the fleet as resets")
                let mismatches = try await setup.groundTruthMismatches()
                #expect(mismatches.isEmpty, "\(mismatches.count) differ: \(mismatches.prefix(10))")
            }
        }
    }

    @Test(.enabled(if: TLSTerminator.executable != nil, Comment(rawValue: TLSTerminator.missing)))
    func aTLSHandshakeResetOnTheWayIsRetriedAndTheJobSucceeds() async throws {
        try await Self.behindTLS { simulator, tls, setup in
            let proxy = try FreezableProxy(forwardingTo: tls.port)
            defer { proxy.stop() }
            proxy.resetNextConnection()
            setup.settings.endpoints = Self.https(port: proxy.port)
            setup.settings.appleCAFile = tls.caFile
            _ = try await setup.load()
            let final = try await setup.work()
            #expect(final.queue.haltedReason == nil)
            #expect(final.queue.dead == 0)
            #expect(proxy.resetConnections == 1)
            let errors = try await setup.query("SELECT error FROM verifications WHERE error LIKE '%curl error%'") {
                try $0["error"].text() ?? ""
            }
            #expect(errors.count == 1 && errors.allSatisfy { $0.contains("tlsHandshake, curl error 35") }, "\(errors)")
            let mismatches = try await setup.groundTruthMismatches()
            #expect(mismatches.isEmpty, "\(mismatches.count) differ: \(mismatches.prefix(10))")
        }
    }

    @Test(.enabled(if: TLSTerminator.executable != nil, Comment(rawValue: TLSTerminator.missing)))
    func aCertificateThatDoesNotVerifyHaltsTheFleetAtOnce() async throws {
        try await Self.behindTLS { simulator, tls, setup in
            setup.settings.endpoints = Self.https(port: tls.port)
            setup.settings.appleCAFile = tls.otherCAFile
            _ = try await setup.load()
            let final = try await setup.work { $0.queue.haltedReason != nil }
            let reason = try #require(final.queue.haltedReason)
            #expect(reason.contains("certificate") && reason.contains("curl error 60") && reason.contains("127.0.0.1"), "\(reason)")
            // At once: the first call halted, long before `halt-after-transport-failures`.
            #expect(simulator.store.statistics.requestsTotal == 0)
            // `work` returns once the pool has stopped: a worker that went on despite the halt has written by now.
            let stored = try await setup.query("SELECT DISTINCT status FROM subscriptions") { try $0["status"].text() }
            #expect(stored == ["unverified"], "no subscription was touched")
        }
    }

    /// Runs `body` with a deployment of 10 receipts and the simulator behind stunnel, whose
    /// certificate is for 127.0.0.1 and signed by `tls.caFile`; `body` points the fleet at it.
    static func behindTLS(_ body: (LiveSimulator, TLSTerminator, inout FleetSetup) async throws -> Void) async throws {
        let nowMs = Self.nowMs
        try await TestDatabase.with { database in
            try await LiveSimulator.with(startMs: nowMs) { simulator in
                let tls = try TLSTerminator(forwardingTo: simulator.port)
                defer { tls.stop() }
                var setup = try FleetSetup(database: database, simulator: simulator, nowMs: nowMs, receipts: 10)
                try await body(simulator, tls, &setup)
            }
        }
    }

    /// Timed: the halt must wait until every call has failed for the configured time.
    @Test func httpsToAPlainPortHaltsAfterFailingForTheConfiguredTime() async throws {
        let nowMs = Self.nowMs
        let secret = uniqueName("never-in-the-alarm")
        try await TestDatabase.with { database in
            try await LiveSimulator.with(startMs: nowMs) { simulator in
                var setup = try FleetSetup(database: database, simulator: simulator, nowMs: nowMs, receipts: 10, secret: secret)
                setup.settings.endpoints = Self.https(port: simulator.port)
                setup.settings.haltAfterTransportFailures = .seconds(3)
                // Probes a second apart: well inside the 3 s, so the streak never lapses between them.
                setup.settings.pausePolicy = try PausePolicy(base: .milliseconds(500), cap: .seconds(1), probeLease: .seconds(30), streak: 5)
                _ = try await setup.load()
                let log = CapturedLog()
                let started = ContinuousClock.now
                let final = try await setup.work(logger: Logger(label: "e2e") { _ in log.handler }) { $0.queue.haltedReason != nil }
                let took = started.duration(to: .now)
                let reason = try #require(final.queue.haltedReason)
                #expect(took >= .seconds(3), "halted after \(took), before every call had failed for 3 s")
                #expect(reason.contains("curl error 35") && reason.contains("127.0.0.1") && reason.contains("scheme"), "\(reason)")
                #expect(final.queue.dead == 0, "the jobs wait for resume")
                for text in [reason, log.text] {
                    #expect(!text.contains(secret) && !text.contains("/verifyReceipt"), "no secret, no URL path")
                    for receipt in setup.fleet { #expect(!text.contains(receipt.receiptData)) }
                }
            }
        }
    }

    static func https(port: Int) -> AppStoreEndpoints {
        AppStoreEndpoints(production: "https://127.0.0.1:\(port)/verifyReceipt", sandbox: "https://127.0.0.1:\(port)/sandbox/verifyReceipt")
    }
}
