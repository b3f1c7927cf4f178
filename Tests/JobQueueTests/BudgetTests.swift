import Foundation
import JobQueue
import RedisClient
import TestSupport
import Testing

/// One rate-limit budget per Apple endpoint: Apple's 429 spends one alone, a group's halt stops
/// its budgets alone, and `resume` lifts both.
@Suite("Budgets per endpoint")
struct BudgetTests {
    @Test("a 429 spends its endpoint's budget alone; a group's halt stops only its budgets; resume lifts both")
    func budgetsAreSpentAndHaltedApart() async throws {
        let deployment = try Deployment()
        try await deployment.cleaningUp {
            try await onOwnThread {
                let limit = try RateLimit(perSecond: 1_000, burst: 10)
                let gate = FleetGate(connection: try deployment.connect(), keys: deployment.keys, limit: limit)
                let statuses = GateBudget(name: "subscription_statuses", group: "server_api", limit: try RateLimit(perSecond: 100, burst: 2))
                let history = GateBudget(name: "transaction_history", group: "server_api", limit: limit)

                // Each budget has a limiter of its own: the statuses' burst of 2 leaves the others whole.
                #expect(try gate.admit(upTo: 5, budget: statuses) == .granted(slots: [.zero, .zero]))
                #expect(try gate.admit(upTo: 3, budget: history) == .granted(slots: [.zero, .zero, .zero]))
                #expect(try gate.admit(upTo: 3) == .granted(slots: [.zero, .zero, .zero]))

                // Apple's 429 on the statuses: they wait for its Retry-After; the others go on.
                let spent = try gate.reportThrottled(statuses, for: .seconds(30))
                #expect(spent > .seconds(29) && spent <= .seconds(30))
                #expect(try gate.reportThrottled(statuses, for: .seconds(5)) > .seconds(29), "a shorter Retry-After shortens nothing")
                guard case .throttled(let wait) = try gate.admit(budget: statuses) else {
                    Issue.record("the spent budget admitted a call")
                    return
                }
                #expect(wait > .seconds(29))
                #expect(try gate.admit(budget: history) == .granted(slots: [.zero]))
                #expect(try gate.admit() == .granted(slots: [.zero]))

                // The Server API's halt stops its budgets, not verifyReceipt's; the fleet's halt stops all.
                try gate.halt(reason: "the Server API refuses the key", group: "server_api")
                #expect(try gate.admit(budget: history) == .halted(reason: "the Server API refuses the key"))
                #expect(try gate.admit() == .granted(slots: [.zero]))
                try gate.halt(reason: "operator")
                #expect(try gate.admit() == .halted(reason: "operator"))

                try gate.resume(budgets: [statuses, history])
                #expect(try gate.admit(budget: statuses) == .granted(slots: [.zero]))
                #expect(try gate.admit(budget: history) == .granted(slots: [.zero]))
                #expect(try gate.admit() == .granted(slots: [.zero]))
            }
        }
    }
}
