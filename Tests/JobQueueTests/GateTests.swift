import Foundation
import JobQueue
import RedisClient
import TestSupport
import Testing

@Suite("Fleet-wide pause and halt")
struct GateTests {
    let deployment: Deployment
    let limit: RateLimit
    let policy: PausePolicy

    init() throws {
        deployment = try Deployment()
        limit = try RateLimit(perSecond: 1000, burst: 50)
        // Pauses long enough that eight threads starting on a busy machine all ask within one.
        policy = try PausePolicy(base: .seconds(1), cap: .seconds(10), probeLease: .seconds(30), streak: 1)
    }

    /// Runs `body` with a gate on a connection of its own, on a thread of its own.
    func withGate<T: Sendable>(_ body: @escaping @Sendable (FleetGate) throws -> T) async throws -> T {
        let (deployment, limit, policy) = (deployment, limit, policy)
        return try await onOwnThread {
            try body(FleetGate(connection: deployment.connect(), keys: deployment.keys, limit: limit, pausePolicy: policy))
        }
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
        #expect(inFlightFailure <= firstPause)  // failures during a pause do not lengthen it
        let duringPause = try await admitTogether(8)
        #expect(duringPause.allSatisfy { if case .paused(let wait) = $0 { wait <= .seconds(1) } else { false } })

        try await Task.sleep(for: .milliseconds(1050))
        let firstPeriod = try await admitTogether(8)
        #expect(firstPeriod.filter { $0 == .probe }.count == 1)
        // The others look again within a second, for the probe's verdict (not after its 30 s lease).
        #expect(firstPeriod.filter { if case .paused(let wait) = $0 { wait <= .seconds(1) } else { false } }.count == 7)

        // The probe fails: a second, twice as long pause (not four times: the in-flight failure
        // above did not count), and a new probe after it.
        let secondPause = try await withGate { try $0.reportUnavailable() }
        #expect(secondPause == .seconds(2))
        try await Task.sleep(for: .milliseconds(2050))
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
                let gate = FleetGate(connection: try deployment.connect(), keys: deployment.keys, limit: limit, pausePolicy: streakOfTwo)
                let first = try gate.reportRecurringFailure(reason: reason, haltAfter: .milliseconds(600))
                let second = try gate.reportRecurringFailure(reason: reason, haltAfter: .milliseconds(600))
                Thread.sleep(forTimeInterval: 0.4)
                let stillFailing = try gate.reportRecurringFailure(reason: reason, haltAfter: .milliseconds(600))
                Thread.sleep(forTimeInterval: 0.3)
                return (first, second, [stillFailing, try gate.reportRecurringFailure(reason: reason, haltAfter: .milliseconds(600))],
                        try gate.admit())
            }
        }
        #expect(first == .counted(pause: .zero), "a stray one is retried alone")
        #expect(second == .counted(pause: .seconds(10)), "the second in a row pauses the fleet")
        #expect(later.first.map { if case .counted = $0 { true } else { false } } == true, "400 ms of failures do not halt")
        #expect(later.last == .halted(reason: reason), "700 ms do")
        #expect(admission == .halted(reason: reason))
    }

    @Test("a recurring failure's streak ends with any other outcome, and forgets itself when no call fails so")
    func aRecurringFailureStreakEnds() async throws {
        let (deployment, limit) = (deployment, limit)
        // No pause: admissions during one would not hear the answers they tell.
        let neverPausing = try PausePolicy(base: .seconds(1), cap: .seconds(1), probeLease: .seconds(30), streak: 100)
        let verdicts = try await deployment.cleaningUp {
            try await onOwnThread {
                let gate = FleetGate(connection: try deployment.connect(), keys: deployment.keys, limit: limit, pausePolicy: neverPausing)
                let report = { try gate.reportRecurringFailure(reason: "curl error 35", haltAfter: .milliseconds(500)) }
                var verdicts: [RecurringFailureVerdict] = []
                for end in [{ _ = try gate.admit(after: .verdict) }, { _ = try gate.admit(after: .configurationError) },
                            { _ = try gate.reportUnavailable() }, { try gate.reportRecovered() }, { Thread.sleep(forTimeInterval: 0.5) }] {
                    _ = try report()
                    Thread.sleep(forTimeInterval: 0.3)
                    try end()  // an answer, another failure, a probe's success, or quiet
                    Thread.sleep(forTimeInterval: 0.3)
                    verdicts.append(try report())
                    try gate.resume()  // a clean slate for the next round
                }
                return verdicts
            }
        }
        #expect(!verdicts.contains { if case .halted = $0 { true } else { false } }, "\(verdicts)")
    }

    @Test("once a pause runs out, a failed probe pauses again at once, whatever answers came before")
    func aFailedProbePausesAgain() async throws {
        let (deployment, limit) = (deployment, limit)
        let streakOfTwo = try PausePolicy(base: .milliseconds(200), cap: .seconds(10), probeLease: .seconds(30), streak: 2)
        let (probe, secondPause) = try await deployment.cleaningUp {
            try await onOwnThread {
                let gate = FleetGate(connection: try deployment.connect(), keys: deployment.keys, limit: limit, pausePolicy: streakOfTwo)
                _ = [try gate.reportUnavailable(), try gate.reportUnavailable()]  // the fleet pauses
                _ = try gate.admit(after: .verdict)  // an answer from before the pause, told late
                Thread.sleep(forTimeInterval: 0.25)
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
        try await Task.sleep(for: .milliseconds(1050))  // the pause ran out, the halt did not
        #expect(try await admitTogether(2).allSatisfy { $0 == .halted(reason: reason) })

        try await withGate { try $0.resume() }
        let resumed = try await withGate { try $0.admit(upTo: 3) }
        #expect(resumed == .granted(slots: [.zero, .zero, .zero]))
    }

    @Test("the gate applies the rate limit: the burst at once, then slots one interval apart up to the horizon; past it, a wait")
    func gateLimitsRate() async throws {
        let policy = policy
        // A token every 10 s: the steps take milliseconds, but a loaded machine has stalled them
        // for two seconds, and the slots' bounds below allow five.
        let slow = try RateLimit(perSecond: 0.1, burst: 50)
        let (burst, booked, beyond) = try await withDeployment { deployment, connection in
            let gate = FleetGate(connection: connection, keys: deployment.keys, limit: slow, pausePolicy: policy)
            return (try gate.admit(upTo: 80), try gate.admit(upTo: 3, within: .seconds(25)), try gate.admit(upTo: 1))
        }
        #expect(burst == .granted(slots: Array(repeating: .zero, count: 50)))
        guard case .granted(let slots) = booked, case .wait(let wait) = beyond else {
            Issue.record("expected slots, then a wait; got \(booked), \(beyond)")
            return
        }
        // Two slots fit in the horizon, 10 s apart (less the time since the burst was taken).
        #expect(slots.count == 2)
        #expect(slots.allSatisfy { $0 > .zero })
        #expect(abs((slots[1] - slots[0]).seconds - 10) < 0.001)
        #expect(slots[0] > .seconds(5) && slots[0] <= .seconds(10))
        // The third slot is 10 s after the second one: waiting for it, not polling.
        #expect(wait > slots[1] && wait <= slots[1] + .seconds(10))
    }
}
