import Foundation
import JobQueue
import RedisClient
import TestSupport
import Testing

/// One rate-limit budget per Apple endpoint: Apple's 429 spends one alone, a group's halt stops
/// its budgets alone, and `resume` lifts both.
@Suite("Budgets per endpoint")
struct BudgetTests {
    /// What the gate answered at each step, by name; read on the test's side (an expectation on
    /// another thread would belong to no test).
    typealias Answers = [(step: String, admission: Admission)]

    @Test("a 429 spends its endpoint's budget alone; a group's halt stops only its budgets; resume lifts both")
    func budgetsAreSpentAndHaltedApart() async throws {
        let deployment = try Deployment()
        let (answers, spent, again) = try await deployment.cleaningUp {
            try await onOwnThread { () throws -> (Answers, Duration, Duration) in
                // Bursts larger than any step asks for: only the throttle and the halts can refuse.
                let limit = try RateLimit(perSecond: 1_000, burst: 20)
                let gate = FleetGate(connection: try deployment.connect(), keys: deployment.keys, limit: limit)
                let statuses = GateBudget(name: "subscription_statuses", group: "server_api", limit: try RateLimit(perSecond: 100, burst: 12))
                let history = GateBudget(name: "transaction_history", group: "server_api", limit: limit)
                var answers: Answers = []
                func ask(_ step: String, _ budget: GateBudget?) throws { answers.append((step, try gate.admit(budget: budget))) }

                // Each budget has a limiter of its own (the statuses' keeps two of its burst for later).
                answers.append(("statuses' burst", try gate.admit(upTo: 10, budget: statuses)))
                try ask("history", history)
                // Apple's 429 on the statuses: they wait for its Retry-After; the others go on.
                let spent = try gate.reportThrottled(statuses, for: .seconds(30))
                let again = try gate.reportThrottled(statuses, for: .seconds(5))
                try ask("statuses spent", statuses)
                try ask("history while the statuses are spent", history)
                try ask("verifyReceipt while the statuses are spent", nil)
                // The Server API's halt stops its budgets, not verifyReceipt's; the fleet's halt stops all.
                try gate.halt(reason: "the Server API refuses the key", group: "server_api")
                try ask("history while the Server API is halted", history)
                try ask("verifyReceipt while the Server API is halted", nil)
                try gate.halt(reason: "operator")
                try ask("verifyReceipt while the fleet is halted", nil)
                try gate.resume(budgets: [statuses, history])
                try ask("statuses after resume", statuses)
                try ask("history after resume", history)
                try ask("verifyReceipt after resume", nil)
                return (answers, spent, again)
            }
        }
        // The steps take milliseconds, but a loaded machine has stalled them for two seconds: the
        // waits are checked against bounds far from both what is kept and what would be wrong
        // (granted, or the 5 s Retry-After).
        let granted = Admission.granted(slots: [.zero])
        let expected: [String: (Admission) -> Bool] = [
            "statuses' burst": { $0 == .granted(slots: Array(repeating: .zero, count: 10)) },
            "history": { $0 == granted },
            "statuses spent": { if case .throttled(let wait) = $0 { wait > .seconds(20) } else { false } },
            "history while the statuses are spent": { $0 == granted },
            "verifyReceipt while the statuses are spent": { $0 == granted },
            "history while the Server API is halted": { $0 == .halted(reason: "the Server API refuses the key") },
            "verifyReceipt while the Server API is halted": { $0 == granted },
            "verifyReceipt while the fleet is halted": { $0 == .halted(reason: "operator") },
            "statuses after resume": { $0 == granted },
            "history after resume": { $0 == granted },
            "verifyReceipt after resume": { $0 == granted },
        ]
        #expect(answers.count == expected.count)
        for (step, admission) in answers {
            #expect(expected[step]?(admission) == true, "\(step): \(admission)")
        }
        #expect(spent > .seconds(29) && spent <= .seconds(30))
        #expect(again > .seconds(20), "a shorter Retry-After shortens nothing")
    }
}
