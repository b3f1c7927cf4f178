import Foundation
import Lanes
import Logging
import ServiceLifecycle
import Synchronization
import TestSupport
import Testing

@Suite struct ThreadServiceTests {
    /// Atomics are not copyable, so the tests share them through a class.
    final class Counters: Sendable {
        let started = Atomic<Int>(0)
        let stopping = Atomic<Int>(0)
        let ended = Atomic<Int>(0)
        let returned = Atomic(false)
    }

    @Test func aSleeperWakesWhenTheSignalIsSetNotWhenItsSleepEnds() async throws {
        let stop = StopSignal()
        let woke = DispatchSemaphore(value: 0)
        let slept = Mutex<Bool?>(nil)
        let sleeping = DispatchSemaphore(value: 0)
        Thread {
            sleeping.signal()
            // Not a wait: the nap the signal cuts short is what is tested (here and below).
            let fullNap = stop.sleep(.seconds(60))
            slept.withLock { $0 = fullNap }
            woke.signal()
        }.start()
        sleeping.wait()
        let setAt = ContinuousClock.now
        stop.set()
        #expect(woke.wait(timeout: .now() + 5) == .success, "the sleeper woke when the signal was set")
        #expect(setAt.duration(to: .now) < .seconds(5))
        #expect(slept.withLock { $0 } == false, "sleep says it woke because of the signal")
        #expect(stop.sleep(.seconds(60)) == false, "a set signal never sleeps again")
    }

    @Test func gracefulShutdownStopsEveryThreadAndWaitsForThem() async throws {
        let counters = Counters()
        // Winding down waits for the test, which first checks that the service is waiting for it.
        let windDown = DispatchSemaphore(value: 0)
        let service = ThreadService("rf-test", threads: 3, grace: .seconds(30), logger: Logger(label: "test")) { _, stop in
            counters.started.add(1, ordering: .relaxed)
            // Not a wait: a duty's nap until the stop, which is what the service must end.
            while stop.sleep(.seconds(60)) {}
            counters.stopping.add(1, ordering: .relaxed)
            windDown.wait()
            counters.ended.add(1, ordering: .relaxed)
        }
        let group = ServiceGroup(configuration: .init(services: [.init(service: service)], logger: Logger(label: "test")))
        let running = Task {
            try await group.run()
            counters.returned.store(true, ordering: .relaxed)
        }
        try await eventually(every: .milliseconds(10)) { counters.started.load(ordering: .relaxed) == 3 }
        #expect(counters.ended.load(ordering: .relaxed) == 0)
        await group.triggerGracefulShutdown()
        try await eventually(every: .milliseconds(10)) { counters.stopping.load(ordering: .relaxed) == 3 }
        let returnedEarly = counters.returned.load(ordering: .relaxed)
        #expect(!returnedEarly, "the service waits while its threads wind down")
        for _ in 0..<3 { windDown.signal() }
        try await running.value
        #expect(counters.ended.load(ordering: .relaxed) == 3, "the service returned only after every thread ended")
    }

    @Test func aThreadStillBusyAfterTheGraceIsLeftBehind() async throws {
        let release = DispatchSemaphore(value: 0)
        let inCall = Atomic(false)
        let service = ThreadService("rf-test-stuck", grace: .milliseconds(200), logger: Logger(label: "test")) { _, _ in
            inCall.store(true, ordering: .relaxed)
            release.wait()  // a call that ignores the stop, as a C call does
        }
        let ended = Task { await service.runThreads() }
        try await eventually(every: .milliseconds(5)) { inCall.load(ordering: .relaxed) }
        ended.cancel()
        #expect(await ended.value == false, "the grace ran out with the thread still busy")
        release.signal()
    }

    @Test func threadsAreNamedForTheKernel() async throws {
        let name = Mutex<String?>(nil)
        let service = ThreadService("rf-test-name", grace: .seconds(5), logger: Logger(label: "test")) { _, stop in
            name.withLock { $0 = try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8) }
            // Not a wait: a duty's nap until the stop.
            while stop.sleep(.seconds(60)) {}
        }
        let running = Task { await service.runThreads() }
        try await eventually(every: .milliseconds(10)) { name.withLock { $0 } != nil }
        running.cancel()
        #expect(await running.value)
        #expect(name.withLock { $0 }?.trimmingCharacters(in: .whitespacesAndNewlines) == "rf-test-name")
    }
}
