import AppStore
@testable import AppStoreClients
@testable import Fleet
import FleetConfiguration
import Foundation
import JobQueue
import Lanes
import RedisClient
import TestSupport
import Testing

/// The one door for calls to Apple outside a verification (`AppleDoor`): every kind of call it
/// lets through waits for its endpoint's budget, honours Retry-After, and is refused at once while
/// a pause or a halt covers it.
@Suite struct AppleDoorTests {
    /// The calls that go through the door: every endpoint but a verification's own.
    static let callKinds: [AppleEndpoint] = AppleEndpoint.allCases.filter { ![.verifyReceipt, .subscriptionStatuses, .transactionHistory].contains($0) }

    /// A gate of its own on the test Redis, with the settings the door reads.
    private func door(patience: Duration, clock: any FleetClock = SystemClock()) throws -> (AppleDoor, FleetGate, FleetSettings) {
        let settings = try FleetSettings.forTest(
            redisURL: TestServers.redisURL, postgresURL: TestServers.postgresURL, keyPrefix: "{\(uniqueName("door"))}",
            rateLimit: try RateLimit(perSecond: 100, burst: 1))
        let gate = try FleetGate.connecting(settings)
        return (AppleDoor(gate: gate, settings: settings, metrics: FleetMetrics(), clock: clock, patience: patience), gate, settings)
    }

    @Test(arguments: callKinds)
    func nothingLeavesWhileTheEndpointsBudgetIsSpent(_ endpoint: AppleEndpoint) async throws {
        try await onOwnThread {
            let (door, gate, settings) = try door(patience: .milliseconds(200))
            _ = try gate.reportThrottled(endpoint, for: .seconds(30), settings: settings)
            var sent = 0
            #expect {
                try door.call(endpoint, forApp: "default") { sent += 1 }
            } throws: { error in
                guard let closed = error as? AppleDoorClosed, case .throttled(let wait) = closed.refusal else { return false }
                return closed.endpoint == endpoint && wait > .seconds(25)
            }
            #expect(sent == 0, "no \(endpoint) call left while its budget was spent")
            // The other endpoints' budgets are their own.
            let other = Self.callKinds.first { $0 != endpoint }!
            try door.call(other, forApp: "default") { sent += 1 }
            #expect(sent == 1)
        }
    }

    @Test func aPauseOrAHaltRefusesAtOnceSayingWhichAndWhy() async throws {
        try await onOwnThread {
            let (door, gate, settings) = try door(patience: .seconds(30))
            var sent = 0
            for _ in 0..<5 { _ = try gate.reportUnavailable() }
            let started = ContinuousClock.now
            #expect {
                try door.call(.orderLookup, forApp: "default") { sent += 1 }
            } throws: { error in
                guard let closed = error as? AppleDoorClosed, case .paused = closed.refusal else { return false }
                return closed.description.contains("paused because Apple is unavailable")
            }
            #expect(ContinuousClock.now - started < .seconds(1), "refused at once, not after its patience")

            try gate.resume(budgets: settings.serverAPIBudgets)
            try gate.halt(reason: "a refused key (401)", group: settings.haltGroup(for: .serverAPI))
            #expect {
                try door.call(.extendRenewalDate, forApp: "default") { sent += 1 }
            } throws: { error in
                guard let closed = error as? AppleDoorClosed, case .halted = closed.refusal else { return false }
                return closed.description.contains("a refused key (401)") && closed.description.contains("receiptfleet resume")
            }
            #expect(sent == 0)
        }
    }

    /// Apple's 429 with Retry-After: the door tells the fleet (every caller of the endpoint waits
    /// too), waits that long itself, and asks again.
    @Test func aCallAnswered429IsAskedAgainAfterRetryAfter() async throws {
        try await onOwnThread {
            let (door, _, _) = try door(patience: .seconds(10))
            var calls = 0
            let started = ContinuousClock.now
            let answer = try door.call(.notificationHistory, forApp: "default") { () throws(ServerAPICallError) -> String in
                calls += 1
                if calls == 1 {
                    throw ServerAPICallError(description: "429", retryAfter: .seconds(1))
                }
                return "page"
            }
            #expect(answer == "page" && calls == 2)
            #expect(ContinuousClock.now - started >= .milliseconds(900), "it waited for Apple's Retry-After")
        }
    }
}
