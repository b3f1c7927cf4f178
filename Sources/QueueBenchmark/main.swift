// Measures the job queue against a real Redis: bulk enqueue rate, Redis memory per queued job,
// reserve+ack rate, and the memory of the de-duplication across scheduler passes. Run through
// benchmarks/queue, which also measures plain XADD to compare.
//
//   queue-benchmark <redis-url> [jobs] [jobs to reserve and ack] [worker threads] [dedupe ids] [passes]
//
// It works under its own key prefix and deletes its keys at the end.
import Foundation
import JobQueue
import RedisClient
import Synchronization

func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}

func usedMemory(_ connection: RedisConnection) throws -> Int {
    let info = try connection.command("INFO", "memory").string ?? ""
    let line = info.split(whereSeparator: \.isNewline).first { $0.hasPrefix("used_memory:") }
    return line.flatMap { Int($0.dropFirst("used_memory:".count)) } ?? 0
}

/// Bulk-enqueues `jobCount` jobs and reports the rate and the Redis memory they take.
func measureEnqueue(_ queue: JobQueue, _ connection: RedisConnection, jobCount: Int) throws {
    let run = "2025-06-01"
    let memoryBefore = try usedMemory(connection)
    let start = ContinuousClock.now
    let result = try queue.enqueue(subscriptionIDs: 0..<Int64(jobCount), run: run, reason: .nightly)
    let elapsed = seconds(ContinuousClock.now - start)
    let memoryDelta = try usedMemory(connection) - memoryBefore
    let keyBytes = try [queue.keys.ready, queue.keys.queued].map { try memoryUsage(of: $0, connection) }.reduce(0, +)
    precondition(result.added == jobCount, "enqueued \(result.added) of \(jobCount)")
    print(String(format: "enqueue_rate %.0f jobs/s (%d jobs in %.2f s)", Double(jobCount) / elapsed, jobCount, elapsed))
    print(String(
        format: "bytes_per_job %.1f (INFO used_memory delta %d bytes; MEMORY USAGE of stream + queued bitmap %.1f bytes/job)",
        Double(memoryDelta) / Double(jobCount), memoryDelta, Double(keyBytes) / Double(jobCount)))
}

func memoryUsage(of key: String, _ connection: RedisConnection) throws -> Int {
    Int(try connection.command("MEMORY", "USAGE", key, "SAMPLES", 0).int ?? 0)
}

/// The Redis memory that keeps scheduler passes from piling up work, with `ids` subscription ids
/// due: the queued bitmap after a pass over all of them, and what a second pass adds (nothing).
/// For comparison, what a bitmap per pass (the design before issue 14, each kept 3 days) cost over
/// `passes` passes: each held what the queued bitmap holds after a pass over the same ids.
///
/// The ready stream is emptied after each page: the bitmap is what is measured, and 10M queued
/// jobs (≈ 470 MB, see bytes_per_job) are not needed to know that they are queued.
func measureDedupe(_ queue: JobQueue, _ connection: RedisConnection, ids: Int, passes: Int) throws {
    let keys = queue.keys
    func pass(_ run: String) throws -> Int {
        var added = 0
        for page in stride(from: 0, to: ids, by: 1_000_000) {
            let pageIDs = Int64(page)..<Int64(min(page + 1_000_000, ids))
            added += try queue.enqueue(subscriptionIDs: pageIDs, run: run, reason: .nightly).added
            try connection.command("XTRIM", keys.ready, "MAXLEN", 0)
        }
        return added
    }
    let firstAdded = try pass("pass-1")
    precondition(firstAdded == ids, "the first pass enqueued \(firstAdded) of \(ids) ids")
    let bitmap = try memoryUsage(of: keys.queued, connection)
    let beforeSecond = try usedMemory(connection)
    let secondAdded = try pass("pass-2")
    let secondDelta = try usedMemory(connection) - beforeSecond
    print(String(format: "dedupe_bitmap_bytes %d (%.2f MB; queued bitmap, %d ids; a second pass added %d jobs and %d bytes)",
                 bitmap, Double(bitmap) / 1_048_576, ids, secondAdded, secondDelta))

    // A copy holds the bitmap's bytes only; a run's own bitmap, grown by SETBIT as the old enqueue
    // grew it, also held the slack the growth leaves, as the queued bitmap does.
    let beforeRuns = try usedMemory(connection)
    let runKeys = (1...passes).map { "\(keys.prefix):run:pass-\($0)" }
    for key in runKeys { try connection.command("COPY", keys.queued, key) }
    let copies = try usedMemory(connection) - beforeRuns
    try connection.command(["DEL"] + runKeys)
    let grown = bitmap * passes
    print(String(format: "per_run_bitmaps_bytes %d–%d (%d passes: measured as copies, %.2f MB each; "
                     + "grown by SETBIT, as large as the queued bitmap)", copies, grown, passes,
                 Double(copies) / Double(passes) / 1_048_576))
    let threeDaysEveryFiveMinutes = Double(3 * 24 * 12) / Double(passes) / 1_048_576
    print(String(format: "per_run_bitmaps_3_days_mb %.0f–%.0f (passes every 5 minutes, each bitmap kept 3 days)",
                 Double(copies) * threeDaysEveryFiveMinutes, Double(grown) * threeDaysEveryFiveMinutes))
}

/// Reserves and acks `jobCount` queued jobs from worker threads, each with its own connection,
/// one job at a time as a worker calling Apple would; reports the rate.
func measureReserveAndAck(_ configuration: RedisConfiguration, _ keys: QueueKeys, jobCount: Int, threads: Int) {
    final class Tally: Sendable {
        /// Jobs still to reserve.
        let budget: Atomic<Int>
        /// Jobs acked, when the last worker finished, and how many still run.
        let state = Mutex((acked: 0, finished: ContinuousClock.now, running: 0))
        init(_ jobCount: Int) { budget = Atomic(jobCount) }
    }
    let tally = Tally(jobCount)
    let start = ContinuousClock.now
    tally.state.withLock { $0.running = threads }
    for index in 0..<threads {
        Thread {
            var acked = 0
            do {
                let worker = try JobQueue(
                    connection: RedisConnection(configuration), keys: keys, consumer: JobQueue.consumerName(thread: index))
                while tally.budget.subtract(1, ordering: .relaxed).newValue >= 0 {
                    for job in try worker.reserve(count: 1, block: .zero) where try worker.ack(job) { acked += 1 }
                }
            } catch {
                print("worker \(index) failed: \(error)")
            }
            tally.state.withLock { $0 = ($0.acked + acked, ContinuousClock.now, $0.running - 1) }
        }.start()
    }
    while tally.state.withLock({ $0.running }) > 0 { Thread.sleep(forTimeInterval: 0.01) }
    let (acked, finished, _) = tally.state.withLock { $0 }
    let elapsedSeconds = seconds(finished - start)
    print(String(format: "reserve_ack_rate %.0f jobs/s (%d jobs, %d threads, reserve(count: 1) then ack, %.2f s)",
                 Double(acked) / elapsedSeconds, acked, threads, elapsedSeconds))
}

let arguments = CommandLine.arguments
guard arguments.count >= 2, let jobCount = Int(arguments.count > 2 ? arguments[2] : "1000000"),
    let reserveCount = Int(arguments.count > 3 ? arguments[3] : "200000"),
    let threads = Int(arguments.count > 4 ? arguments[4] : "8"),
    let dedupeIDs = Int(arguments.count > 5 ? arguments[5] : "10000000"),
    let passes = Int(arguments.count > 6 ? arguments[6] : "12"), dedupeIDs >= 1, passes >= 1
else {
    print("usage: queue-benchmark <redis-url> [jobs (1000000)] [jobs to reserve and ack (200000)] [worker threads (8)] "
        + "[dedupe ids (10000000)] [per-run bitmap passes (12)]")
    exit(2)
}
let configuration = try RedisConfiguration(url: arguments[1])
let keys = try QueueKeys(prefix: "{rfbench-\(getpid())}")
let connection = try RedisConnection(configuration)
do {
    try measureEnqueue(JobQueue(connection: connection, keys: keys, consumer: "benchmark"), connection, jobCount: jobCount)
    measureReserveAndAck(configuration, keys, jobCount: min(reserveCount, jobCount), threads: threads)
    try connection.deleteKeys(prefixed: keys.prefix)
    let scheduler = try JobQueue(connection: connection, keys: keys, consumer: "benchmark")
    try measureDedupe(scheduler, connection, ids: dedupeIDs, passes: passes)
    try connection.deleteKeys(prefixed: keys.prefix)
} catch {
    print("benchmark failed: \(error)")
    _ = try? connection.deleteKeys(prefixed: keys.prefix)
    exit(1)
}
