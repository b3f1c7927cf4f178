import AppStore
import AppStoreSimulator
import Fleet
import Foundation
import TestSupport
import Testing

/// Rotating the shared secret under a running fleet: configured with the new secret and the
/// previous one, the fleet goes on while Apple still knows only the old one, and after Apple
/// switches to the new one; nothing halts, nothing is buried, every state is the truth.
@Suite struct SharedSecretRotationTests {
    @Test func switchingTheSecretInAppStoreConnectHaltsNothing() async throws {
        let nowMs = Int64(Date().timeIntervalSince1970 * 1000)
        // Apple takes 20 ms a call, so the night lasts long enough to switch in the middle of it.
        let knobs = FaultKnobs(latency: Latency(meanMs: 20), sharedSecret: "the-old-secret")
        try await TestDatabase.with { database in
            try await LiveSimulator.with(knobs: knobs, startMs: nowMs) { simulator in
                var setup = try FleetSetup(database: database, simulator: simulator, nowMs: nowMs, receipts: 120, secret: "the-new-secret")
                setup.settings.previousSharedSecret = SharedSecret("the-old-secret")
                let total = try await setup.load().enqueued
                let switched = Task { [setup] in
                    // A third of the night, or a minute: a fleet that halted verifies nothing more.
                    try await eventually(within: .seconds(60)) { try await setup.verified(runID: "e2e") >= total / 3 }
                    var switchedKnobs = simulator.store.knobs
                    switchedKnobs.sharedSecret = "the-new-secret"
                    try simulator.store.setKnobs(switchedKnobs)
                    return try await setup.verified(runID: "e2e")
                }
                let final = try await setup.work()
                let verifiedBeforeTheSwitch = try await switched.value
                #expect(verifiedBeforeTheSwitch < total, "Apple switched while the fleet worked")
                #expect(final.queue.haltedReason == nil)
                #expect(final.queue.dead == 0)
                #expect(try await setup.verified(runID: "e2e") == total)
                let mismatches = try await setup.groundTruthMismatches()
                #expect(mismatches.isEmpty, "\(mismatches.prefix(5))")
            }
        }
    }
}
