import AppStore
import FleetConfiguration
import Foundation
import JobQueue
import Lanes
import VerificationUseCase

/// A worker thread's leave to call Apple: the fleet's `FleetGate` in Redis, with each call paced
/// to its time slot.
///
/// A granted call sleeps here until its slot, so calls reach Apple at the limit's pace however
/// many threads wait, and a waiting thread asks Redis at most once per call. When calls are quick (Apple
/// near, the limit far), one admission books several calls: the caller's upcoming ones it can make
/// back to back within `slotTolerance`, or as many as the process's workers took in the last such
/// window, one more; the slots it does not use itself go to the process's `SlotPool`, where its
/// other workers take them. Slots are placed by the admission's own Redis time (the pool's
/// `RedisClock`), not by when this thread happened to read it. None is made much later than its
/// slot (late calls could bunch above the limit): a slot that had passed when the admission was
/// read, or that the thread comes or wakes too late for, is given up: the limit is a promise about
/// when calls reach Apple, not about when they were booked. A pause or halt that another thread of
/// the process learned of (`PauseBoard`) cancels a call, and so does the worker's stop signal (then
/// the job goes back at once).
final class PacedGate: AppleGate {
    /// How far ahead a worker may book its time slot. Far enough that every thread of a large
    /// fleet holds one (3 processes × 512 threads at 400/s book 3.8 s ahead), so waiting threads
    /// sleep until their slot instead of asking Redis again; a worker stopped during its sleep
    /// wastes its slot, which costs the fleet one call.
    static let bookingHorizon = Duration.seconds(10)
    /// How much later than its slot a worker may make a call: any second then sees at most the
    /// limit, its burst, and the calls of 5 ms at the rate (0.5%), which leaves the rest of a 2%
    /// margin to the moments between this check and the wire, when a starved worker may still be
    /// preempted (10 ms left none: 1 × 512 threads on two cores saw 410 calls in a second at
    /// 400/s). A call later than that gives its slot up.
    static let slotTolerance = Duration.milliseconds(5)
    /// How long a worker rests when the fleet is halted before it looks again.
    static let haltedRest = Duration.seconds(5)

    private let connections: Connections
    private let settings: FleetSettings
    private let stop: StopSignal
    private let pauses: PauseBoard
    private let slots: SlotPool
    private let metrics: FleetMetrics
    /// What this worker's last call got from Apple: the next admission says so, which ends the
    /// fleet's streak of unavailable answers (and, for an answer about a receipt, of configuration errors).
    private var lastAnswer = LastAnswer.none
    /// The app whose receipt the last call was about (nil for the Server API's): its streak of
    /// configuration errors is the one that answer ends.
    private var lastApp: String?
    /// What this worker's last call to Apple took: how many calls it can make back to back, and
    /// how many jobs its next batch holds.
    private(set) var lastCallDuration = Duration.seconds(1)
    /// The time slot of the call admitted last, until it leaves (`departing`).
    private var admittedSlot: ContinuousClock.Instant?
    /// Set when an admission found the fleet paused or halted: how long to rest before reserving
    /// more jobs, so a stopped fleet does not churn its backlog through the delayed set.
    private(set) var restBeforeNextBatch: Duration?

    init(
        connections: Connections, settings: FleetSettings, stop: StopSignal, pauses: PauseBoard, slots: SlotPool, metrics: FleetMetrics
    ) {
        self.connections = connections
        self.settings = settings
        self.stop = stop
        self.pauses = pauses
        self.slots = slots
        self.metrics = metrics
    }

    /// How many of `upcoming` calls to book in one admission: as many as fit back to back, at the
    /// last call's pace, within `slotTolerance` of the first one's slot; at least one.
    static func callsToBook(upcoming: Int, lastCall: Duration) -> Int {
        lastCall.callsFitting(in: slotTolerance, atMost: upcoming)
    }

    func admit(upcoming: Int, to endpoint: AppleEndpoint, forApp app: String?) throws -> Admission {
        admittedSlot = nil
        let admission = try slot(upcoming: upcoming, endpoint: endpoint, app: app)
        guard !stop.isSet else { return .paused(.zero) }  // woke to stop: the job goes back at once
        switch admission {
        case .paused(let wait): restBeforeNextBatch = wait.withJitter()
        // This thread alone rests, so that it does not churn the endpoint's jobs through the delayed set.
        case .throttled(let wait): restBeforeNextBatch = min(wait, Self.haltedRest).withJitter()
        case .halted: restBeforeNextBatch = Self.haltedRest
        default: break
        }
        return admission
    }

    /// Returns how long to rest before the next batch, if the fleet stopped meanwhile, and forgets it.
    func endBatch() -> Duration? {
        defer { restBeforeNextBatch = nil }
        return restBeforeNextBatch
    }

    /// A slot of the process's if one is still good, else the gate's answer; a granted call waits for its slot.
    /// A halt seen through the Server API's budgets may be that backend's alone, and an app's halt
    /// is that app's: only a pause, or a halt seen through verifyReceipt's, tells this process's
    /// other threads to stop. (A slot booked before an app's halt may still be used for that app's
    /// receipt: its 21004 finds the app halted, and the job waits like the others.)
    private func slot(upcoming: Int, endpoint: AppleEndpoint, app: String?) throws -> Admission {
        while true {
            while let slot = slots.take(endpoint) {
                guard reached(slot) else { continue }
                if let pause = pauses.remaining() { return .paused(pause) }
                admittedSlot = slot
                return .granted(slots: [.zero])
            }
            let asked = ContinuousClock.now
            let wanted = max(Self.callsToBook(upcoming: upcoming, lastCall: lastCallDuration), slots.recentDemand(for: endpoint) + 1)
            let admission = try connections.gate.admit(
                endpoint, forApp: app, upTo: wanted, within: Self.bookingHorizon, after: lastAnswer, lastApp: lastApp,
                placingSlotsBy: slots.redisClock, settings: settings)
            (lastAnswer, lastApp) = (.none, nil)
            switch admission {
            case .wait(let wait):
                // Every slot within the horizon is booked: far more threads than the rate can serve.
                // Spread over a second, so they do not all ask again at the same instant.
                connections.clock.sleep(wait + .milliseconds(Int.random(in: 0...1000)), unless: stop)
                metrics.waitedForToken(asked.duration(to: .now))
                continue
            case .granted(let booked):
                let now = ContinuousClock.now
                let times = booked.map { now + $0 }
                slots.keep(times, for: endpoint)
                let reachedFirst = reached(times[0])
                metrics.waitedForToken(asked.duration(to: .now))
                guard reachedFirst else { continue }
                if let pause = pauses.remaining() { return .paused(pause) }
                admittedSlot = times[0]
                return .granted(slots: [.zero])  // its slot has come: the call goes now
            case .paused(let wait): pauses.note(pausedFor: wait)
            case .halted:
                slots.drop(endpoint)
                if endpoint.backend == .verifyReceipt { pauses.note(pausedFor: Self.haltedRest) }
            case .probe: metrics.probed()
            case .throttled: slots.drop(endpoint)
            case .appHalted: break
            }
            return admission
        }
    }

    /// Sleeps until `slot`, and says whether the call may still be made: a thread that wakes later
    /// than `slotTolerance` after its slot (starved of CPU, or its process stopped) gives the slot
    /// up and books another, because every thread woken late at once would fire together, and Apple
    /// would see a second's calls plus the late ones. (Woken to stop, it goes on: the caller
    /// returns the job.) A slot is an instant of the monotonic clock, not of the process's: it is
    /// placed by Redis's reply (`RedisClock`) and paces real calls to Apple, to within milliseconds.
    private func reached(_ slot: ContinuousClock.Instant) -> Bool {
        stop.sleep(ContinuousClock.now.duration(to: slot))
        guard ContinuousClock.now > slot + Self.slotTolerance, !stop.isSet else { return true }
        metrics.gaveUpSlot()
        return false
    }

    /// The last check of the slot, right before the call leaves (its body built): a thread
    /// preempted after it woke, for longer than `slotTolerance` past its slot, gives the slot up
    /// here and books another, as `reached` does on waking. (A worker told to stop meanwhile
    /// finishes the call in hand rather than book again.)
    func departing(to endpoint: AppleEndpoint, forApp app: String?) throws -> Admission {
        defer { admittedSlot = nil }
        guard let slot = admittedSlot, ContinuousClock.now > slot + Self.slotTolerance, !stop.isSet else {
            return .granted(slots: [.zero])
        }
        metrics.gaveUpSlot()
        return try admit(upcoming: 1, to: endpoint, forApp: app)
    }

    func called(_ answer: LastAnswer, by endpoint: AppleEndpoint, forApp app: String?, taking duration: Duration) {
        (lastAnswer, lastApp) = (answer, endpoint.haltingApp(app))
        lastCallDuration = duration
    }

    func reportRecovered() throws {
        try connections.gate.reportRecovered()
        pauses.clear()
    }

    func reportUnanswered(_ action: VerificationAction, _ exchange: VerificationExchange) throws -> RecurringFailureVerdict {
        let verdict = try connections.reportUnanswered(action, exchange, settings: settings)
        switch verdict {
        case .counted(let pause): pauses.note(pausedFor: pause)
        case .halted: pauses.note(pausedFor: Self.haltedRest)
        }
        return verdict
    }

    func reportThrottled(_ endpoint: AppleEndpoint, for wait: Duration) throws -> Duration {
        slots.drop(endpoint)
        return try connections.gate.reportThrottled(endpoint, for: wait, settings: settings)
    }

    func reportConfigurationError(
        subscriptionID: Int64, app: String, reason: String, needed: Int, backend: VerificationBackend
    ) throws -> Bool {
        // One app's halt, or the Server API's: this process's other threads go on.
        try connections.gate.reportConfigurationError(
            subscriptionID: subscriptionID, app: app, reason: reason, needed: needed, backend: backend, settings: settings)
    }

    func halt(reason: String, backend: VerificationBackend) throws {
        try connections.gate.halt(reason: reason, group: settings.haltGroup(for: backend))
        if backend == .verifyReceipt { pauses.note(pausedFor: Self.haltedRest) }
    }
}

extension Duration {
    /// How many calls that each take this long fit back to back in `span`: at least one, at most
    /// `limit` (a call measured at zero counts as a microsecond).
    func callsFitting(in span: Duration, atMost limit: Int) -> Int {
        max(1, min(limit, Int(span / max(self, .microseconds(1)))))
    }
}
