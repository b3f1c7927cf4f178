import Foundation
import Lanes
import Synchronization
import Testing

/// A resource that is not Sendable and records which thread it lives on.
final class ThreadBoundCounter {
    let thread = pthread_self()
    var count = 0
}

@Suite struct LaneTests {
    @Test func runsWorkInOrderOnOneThreadWithOneResource() async throws {
        let made = Atomic<Int>(0)
        let lane = Lane(name: "test-lane") { () -> ThreadBoundCounter in
            made.add(1, ordering: .relaxed)
            return ThreadBoundCounter()
        }
        defer { lane.shutdown() }
        for expected in 1...50 {
            let (count, sameThread) = try await lane.run { counter in
                counter.count += 1
                return (counter.count, pthread_equal(counter.thread, pthread_self()) != 0)
            }
            #expect(count == expected)
            #expect(sameThread)
        }
        #expect(made.load(ordering: .relaxed) == 1)
    }

    @Test func neverRunsOnTheCallersThread() async throws {
        let lane = Lane(name: "test-lane") { ThreadBoundCounter() }
        defer { lane.shutdown() }
        // The kernel's name for the thread the work ran on.
        let laneThreadName = try await lane.run { _ in
            try String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)
                .trimmingCharacters(in: .whitespacesAndNewlines)
        }
        #expect(laneThreadName == "test-lane")
    }

    @Test func aFailedResourceIsRetriedAndItsErrorReachesTheCaller() async throws {
        struct Refused: Error {}
        let attempts = Atomic<Int>(0)
        let lane = Lane(name: "test-lane") { () -> ThreadBoundCounter in
            if attempts.add(1, ordering: .relaxed).newValue == 1 { throw Refused() }
            return ThreadBoundCounter()
        }
        defer { lane.shutdown() }
        await #expect(throws: Refused.self) { try await lane.run { $0.count } }
        #expect(try await lane.run { $0.count } == 0)
        #expect(attempts.load(ordering: .relaxed) == 2)
    }

    @Test func refusesWorkAfterShutdown() async throws {
        let lane = Lane(name: "test-lane") { ThreadBoundCounter() }
        lane.shutdown()
        lane.shutdown()  // a second call is harmless
        await #expect(throws: LaneError.self) { try await lane.run { $0.count } }
    }

    /// Atomics are not copyable, so the pool test shares them through a class.
    final class Concurrency: Sendable {
        let running = Atomic<Int>(0)
        let peak = Atomic<Int>(0)
    }

    @Test func aPoolRunsAtMostItsSizeAtOnce() async throws {
        let concurrency = Concurrency()
        let pool = LanePool(name: "test-pool", size: 3) { ThreadBoundCounter() }
        defer { pool.shutdown() }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<12 {
                group.addTask {
                    try await pool.run { _ in
                        let now = concurrency.running.add(1, ordering: .relaxed).newValue
                        concurrency.peak.max(now, ordering: .relaxed)
                        // Real time: a call long enough for the others to pile up behind it.
                        usleep(50_000)
                        concurrency.running.subtract(1, ordering: .relaxed)
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(concurrency.peak.load(ordering: .relaxed) == 3)
    }
}
