import Foundation
import JobQueue
import RedisClient
import TestSupport
import Testing

/// The gate's time (pauses, slots, streaks) is a driven clock: the tests move it instead of waiting.
@Suite("Fleet-wide pause and halt")
struct GateTests {
    let deployment: Deployment
    let limit: RateLimit
    let policy: PausePolicy

    init() throws {
        deployment = try Deployment(clock: .driven)
        limit = try RateLimit(perSecond: 1000, burst: 50)
        policy = try PausePolicy(base: .seconds(1), cap: .seconds(10), probeLease: .seconds(30), streak: 1)
    }

    /// Runs `body` with a gate on a connection of its own, on a thread of its own.
    func withGate<T: Sendable>(_ body: @escaping @Sendable (FleetGate) throws -> T) async throws -> T {
        let (deployment, limit, policy) = (deployment, limit, policy)
        return try await onOwnThread { try body(deployment.gate(limit: limit, pausePolicy: policy)) }
    }

    /// `count` workers asking at once, each with its own connection and thread.
    func admitTogether(_ count: Int) async throws -> [Admission] {
        try await withThrowingTaskGroup(of: Admission.self) { group in
            for _ in 0..<count { group.addTask { try await withGate { try $0.admit() } } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
    }

    @Test("a pause stops everyone, then lets exactly one probe through per period; recovery reopens")
    func pauseAndProbe() async throws {
        try await deployment.cleaningUp(checkPauseAndProbe)
    }

    private func checkPauseAndProbe() async throws {
        let (firstPause, inFlightFailure) = try await withGate { gate in
            (try gate.reportUnavailable(), try gate.reportUnavailable())
        }
        #expect(firstPause == .seconds(1))
        #expect(inFlightFailure == firstPause)  // failures during a pause do not lengthen it
        let duringPause = try await admitTogether(8)
        #expect(duringPause.allSatisfy { $0 == .paused(.seconds(1)) })

        try await deployment.clock.advance(by: .milliseconds(999))
        #expect(try await admitTogether(2).allSatisfy { $0 == .paused(.milliseconds(1)) })
        try await deployment.clock.advance(by: .milliseconds(1))
        let firstPeriod = try await admitTogether(8)
        #expect(firstPeriod.filter { $0 == .probe }.count == 1)
        // The others look again within a second, for the probe's verdict (not after its 30 s lease).
        #expect(firstPeriod.filter { $0 == .paused(.seconds(1)) }.count == 7)

        // The probe fails: a second, twice as long pause (not four times: the in-flight failure
        // above did not count), and a new probe after it.
        let secondPause = try await withGate { try $0.reportUnavailable() }
        #expect(secondPause == .seconds(2))
        try await deployment.clock.advance(by: .seconds(2))
        let secondPeriod = try await admitTogether(8)
        #expect(secondPeriod.filter { $0 == .probe }.count == 1)

        try await withGate { try $0.reportRecovered() }
        let reopened = try await admitTogether(4)
        #expect(reopened.allSatisfy { $0 == .granted(slots: [.zero]) })
    }

    @Test("stray unavailable answers do not pause the fleet; a streak of them does, and an answer ends a streak")
    func pauseAfterAStreak() async throws {
        let (deployment, limit) = (deployment, limit)
        let streakOfThree = try PausePolicy(base: .seconds(1), cap: .seconds(10), probeLease: .seconds(30), streak: 3)
        let (stray, afterAnswer, third) = try await deployment.cleaningUp {
            try await onOwnThread {
                let gate = FleetGate(connection: try deployment.connect(), keys: deployment.keys, limit: limit, pausePolicy: streakOfThree)
                let stray = [try gate.reportUnavailable(), try gate.reportUnavailable()]
                _ = try gate.admit(after: .verdict)  // some worker got an answer: the streak starts again
                let afterAnswer = [try gate.reportUnavailable(), try gate.reportUnavailable()]
                return (stray, afterAnswer, try gate.reportUnavailable())
            }
        }
        #expect(stray == [.zero, .zero])
        #expect(afterAnswer == [.zero, .zero])
        #expect(third == .seconds(1), "the third in a row pauses the fleet")
    }

    @Test("one receipt's configuration error does not halt the fleet; several subscriptions in a row do")
    func haltAfterSeveralConfigurationErrors() async throws {
        let (deployment, limit) = (deployment, limit)
        let (lone, sameAgain, afterVerdict, third, admission) = try await deployment.cleaningUp {
            try await onOwnThread {
                let gate = FleetGate(connection: try deployment.connect(), keys: deployment.keys, limit: limit)
                let report = { (id: Int64) in try gate.reportConfigurationError(subscriptionID: id, reason: "21004: wrong secret", needed: 3) }
                let lone = try report(1)
                let sameAgain = try [report(1), report(2)]  // the same subscription counts once
                _ = try gate.admit(after: .verdict)  // a receipt answered: the streak starts again
                let afterVerdict = try [report(3), report(4)]
                _ = try gate.admit(after: .configurationError)  // an answer, but no verdict: the streak goes on
                return (lone, sameAgain, afterVerdict, try report(5), try gate.admit())
            }
        }
        #expect(!lone && sameAgain == [false, false] && afterVerdict == [false, false])
        #expect(third, "the third different subscription in a row halts")
        #expect(admission == .halted(reason: "21004: wrong secret"))
    }

    @Test("an app's configuration errors halt that app alone, counted in a streak of its own; resume --app lifts it")
    func oneAppHalts() async throws {
        let (deployment, limit) = (deployment, limit)
        let (first, second, journal, other, fleetWide, afterResume) = try await deployment.cleaningUp {
            try await onOwnThread {
                let gate = FleetGate(connection: try deployment.connect(), keys: deployment.keys, limit: limit)
                let report = { (id: Int64) in
                    try gate.reportConfigurationError(subscriptionID: id, reason: "21004: journal's secret", needed: 2, app: "journal")
                }
                let first = try report(1)
                // Another app's receipt answered in between: the journal's streak goes on.
                _ = try gate.admit(after: .verdict, lastApp: "photos", app: "photos")
                let second = try report(2)
                let journal = try gate.admit(app: "journal")
                let other = try gate.admit(app: "photos")
                let fleetWide = try gate.admit()
                try gate.resume(app: "journal")
                return (first, second, journal, other, fleetWide, try gate.admit(app: "journal"))
            }
        }
        #expect(!first && second, "the second subscription of the app halts it, whatever the other app's answers")
        #expect(journal == .appHalted(reason: "21004: journal's secret"))
        if case .granted = other {} else { Issue.record("another app is admitted: \(other)") }
        if case .granted = fleetWide {} else { Issue.record("a call for no app is admitted: \(fleetWide)") }
        if case .granted = afterResume {} else { Issue.record("resumed, the app is admitted: \(afterResume)") }
    }

    @Test("a recurring failure counts toward the pause, and halts once every call failed so for the set time")
    func haltAfterARecurringFailure() async throws {
        let (deployment, limit) = (deployment, limit)
        let streakOfTwo = try PausePolicy(base: .seconds(10), cap: .seconds(10), probeLease: .seconds(30), streak: 2)
        let reason = "HTTP request to 127.0.0.1 failed (tlsHandshake, curl error 35)"
        let (first, second, later, admission) = try await deployment.cleaningUp {
            try await onOwnThread {
                let connection = try deployment.connect()
                let gate = try deployment.gate(limit: limit, pausePolicy: streakOfTwo, on: connection)
                let report = { try gate.reportRecurringFailure(reason: reason, haltAfter: .seconds(600)) }
                let (first, second) = (try report(), try report())
                try deployment.clock.advance(by: .seconds(600) - .milliseconds(1), on: connection)
                let stillFailing = try report()
                try deployment.clock.advance(by: .milliseconds(1), on: connection)
                return (first, second, [stillFailing, try report()], try gate.admit())
            }
        }
        #expect(first == .counted(pause: .zero), "a stray one is retried alone")
        #expect(second == .counted(pause: .seconds(10)), "the second in a row pauses the fleet")
        #expect(later.first.map { if case .counted = $0 { true } else { false } } == true, "a ms short of 10 minutes does not halt")
        #expect(later.last == .halted(reason: reason), "10 minutes of failures do")
        #expect(admission == .halted(reason: reason))
    }

    @Test("a recurring failure's streak ends with any other outcome, and forgets itself when no call fails so")
    func aRecurringFailureStreakEnds() async throws {
        let (deployment, limit) = (deployment, limit)
        // No pause: admissions during one would not hear the answers they tell.
        let neverPausing = try PausePolicy(base: .seconds(1), cap: .seconds(1), probeLease: .seconds(30), streak: 100)
        let verdicts = try await deployment.cleaningUp {
            try await onOwnThread {
                let connection = try deployment.connect()
                let gate = try deployment.gate(limit: limit, pausePolicy: neverPausing, on: connection)
                // Each round fails, ends the streak, then fails again after as long as halts a streak that goes on.
                func round(haltAfter: Duration, ending end: () throws -> Void) throws -> RecurringFailureVerdict {
                    _ = try gate.reportRecurringFailure(reason: "curl error 35", haltAfter: haltAfter)
                    try end()
                    try deployment.clock.advance(by: haltAfter, on: connection)
                    defer { try? gate.resume() }  // a clean slate for the next round
                    return try gate.reportRecurringFailure(reason: "curl error 35", haltAfter: haltAfter)
                }
                // An answer, another failure, a probe's success.
                var verdicts = try [{ _ = try gate.admit(after: .verdict) }, { _ = try gate.admit(after: .configurationError) },
                                    { _ = try gate.reportUnavailable() }, { try gate.reportRecovered() }]
                    .map { try round(haltAfter: .seconds(600), ending: $0) }
                // Or quiet. Real time: the streak's key expires on Redis's own clock, which only waiting moves.
                verdicts.append(try round(haltAfter: .milliseconds(200)) { Thread.sleep(forTimeInterval: 0.3) })
                return verdicts
            }
        }
        #expect(verdicts.count == 5)
        #expect(!verdicts.contains { if case .halted = $0 { true } else { false } }, "\(verdicts)")
    }

    @Test("once a pause runs out, a failed probe pauses again at once, whatever answers came before")
    func aFailedProbePausesAgain() async throws {
        let (deployment, limit) = (deployment, limit)
        let streakOfTwo = try PausePolicy(base: .milliseconds(200), cap: .seconds(10), probeLease: .seconds(30), streak: 2)
        let (probe, secondPause) = try await deployment.cleaningUp {
            try await onOwnThread {
                let connection = try deployment.connect()
                let gate = try deployment.gate(limit: limit, pausePolicy: streakOfTwo, on: connection)
                _ = [try gate.reportUnavailable(), try gate.reportUnavailable()]  // the fleet pauses
                _ = try gate.admit(after: .verdict)  // an answer from before the pause, told late
                try deployment.clock.advance(by: .milliseconds(200), on: connection)
                return (try gate.admit(), try gate.reportUnavailable())
            }
        }
        #expect(probe == .probe)
        #expect(secondPause == .milliseconds(400), "the failed probe doubles the pause")
    }

    @Test("a halt stops everyone, paused or not, until resume")
    func haltUntilResume() async throws {
        try await deployment.cleaningUp(checkHaltUntilResume)
    }

    private func checkHaltUntilResume() async throws {
        let reason = "21004: the shared secret is wrong; fix the configuration, then resume"
        try await withGate { gate in
            try gate.halt(reason: reason)
            _ = try gate.reportUnavailable()
        }
        let halted = try await admitTogether(4)
        #expect(halted.allSatisfy { $0 == .halted(reason: reason) })
        try await deployment.clock.advance(by: .seconds(1))  // the pause ran out, the halt did not
        #expect(try await admitTogether(2).allSatisfy { $0 == .halted(reason: reason) })

        try await withGate { try $0.resume() }
        let resumed = try await withGate { try $0.admit(upTo: 3) }
        #expect(resumed == .granted(slots: [.zero, .zero, .zero]))
    }

    @Test("standing reads every halt with since when, and the pause; a second halt keeps the first's time; resume forgets it")
    func standingSaysSinceWhen() async throws {
        try await deployment.cleaningUp(checkStanding)
    }

    private func checkStanding() async throws {
        let (deployment, limit) = (deployment, limit)
        let clock = deployment.clock
        let (clear, first, second, afterAppResume, resumed, start) = try await withGate { gate in
            let connection = try deployment.connect()
            let start = try clock.now(on: connection)
            let read = { try gate.standing(groups: ["server_api"], apps: ["photos", "games"]) }
            let clear = try read()
            try gate.halt(reason: "Apple maintenance")
            _ = try gate.reportConfigurationError(subscriptionID: 7, reason: "21004: photos", needed: 1, app: "photos")
            _ = try gate.reportUnavailable()
            let first = try read()
            try clock.advance(by: .seconds(90), on: connection)
            try gate.halt(reason: "still Apple maintenance")
            try gate.halt(reason: "the key was refused", group: "server_api")
            let second = try read()
            try gate.resume(app: "photos")
            let afterAppResume = try read()
            try gate.resume(budgets: [], apps: ["photos", "games"])
            try gate.resume(budgets: [GateBudget(name: "server_api", group: "server_api", limit: limit)], apps: [])
            return (clear, first, second, afterAppResume, try read(), start)
        }
        #expect(clear.isClear)
        #expect(first.fleet == GateStanding.Halt(reason: "Apple maintenance", since: start))
        #expect(first.apps == ["photos": GateStanding.Halt(reason: "21004: photos", since: start)])
        #expect(first.pausedUntil == start + 1000)
        #expect(second.fleet == GateStanding.Halt(reason: "still Apple maintenance", since: start), "halted since the first halt")
        #expect(second.groups == ["server_api": GateStanding.Halt(reason: "the key was refused", since: start + 90_000)])
        #expect(afterAppResume.apps.isEmpty && afterAppResume.fleet != nil)
        #expect(resumed.isClear)
        // A new halt starts its own time.
        let again = try await withGate { gate in
            try gate.halt(reason: "again")
            return try gate.standing(groups: [], apps: []).fleet?.since
        }
        #expect(again == start + 90_000)
    }

    @Test("the gate applies the rate limit: the burst at once, then slots one interval apart up to the horizon; past it, a wait")
    func gateLimitsRate() async throws {
        let policy = policy
        let slow = try RateLimit(perSecond: 0.1, burst: 50)  // a token every 10 s
        let (burst, booked, beyond, later) = try await withDeployment(clock: .driven) { deployment, connection in
            let gate = try deployment.gate(limit: slow, pausePolicy: policy, on: connection)
            let taken = (try gate.admit(upTo: 80), try gate.admit(upTo: 3, within: .seconds(25)), try gate.admit(upTo: 1))
            try deployment.clock.advance(by: .seconds(30), on: connection)
            return (taken.0, taken.1, taken.2, try gate.admit(upTo: 2))
        }
        #expect(burst == .granted(slots: Array(repeating: .zero, count: 50)))
        // Two slots fit in the horizon, 10 s apart.
        #expect(booked == .granted(slots: [.seconds(10), .seconds(20)]))
        // The third slot is 10 s after the second one: waiting for it, not polling.
        #expect(beyond == .wait(.seconds(30)))
        // And it comes then, alone: the burst is spent, and one interval lies between slots.
        #expect(later == .granted(slots: [.zero]))
    }
}
