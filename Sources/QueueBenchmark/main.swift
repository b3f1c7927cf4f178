// Measures the job queue against a real Redis: bulk enqueue rate, Redis memory per queued job,
// and reserve+ack rate. Run through benchmarks/queue, which also measures plain XADD to compare.
//
//   queue-benchmark <redis-url> [jobs] [jobs to reserve and ack] [worker threads]
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

func deleteKeys(_ keys: QueueKeys, _ connection: RedisConnection) throws {
    var cursor = "0"
    repeat {
        let reply = try connection.command("SCAN", cursor, "MATCH", "\(keys.prefix)*", "COUNT", 1000).array ?? []
        cursor = reply.first?.string ?? "0"
        let found = reply.last?.array?.compactMap(\.string) ?? []
        if !found.isEmpty { try connection.command(["DEL"] + found) }
    } while cursor != "0"
}

/// Bulk-enqueues `jobCount` jobs and reports the rate and the Redis memory they take.
func measureEnqueue(_ queue: JobQueue, _ connection: RedisConnection, jobCount: Int) throws {
    let run = "2025-06-01"
    let memoryBefore = try usedMemory(connection)
    let start = ContinuousClock.now
    let result = try queue.enqueue(subscriptionIDs: 0..<Int64(jobCount), run: run, reason: .nightly)
    let elapsed = seconds(ContinuousClock.now - start)
    let memoryDelta = try usedMemory(connection) - memoryBefore
    let keyBytes = try [queue.keys.ready, queue.keys.run(run)].map { key in
        try connection.command("MEMORY", "USAGE", key, "SAMPLES", 0).int ?? 0
    }.reduce(0, +)
    precondition(result.added == jobCount, "enqueued \(result.added) of \(jobCount)")
    print(String(format: "enqueue_rate %.0f jobs/s (%d jobs in %.2f s)", Double(jobCount) / elapsed, jobCount, elapsed))
    print(String(
        format: "bytes_per_job %.1f (INFO used_memory delta %d bytes; MEMORY USAGE of stream + run bitmap %.1f bytes/job)",
        Double(memoryDelta) / Double(jobCount), memoryDelta, Double(keyBytes) / Double(jobCount)))
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
    let threads = Int(arguments.count > 4 ? arguments[4] : "8")
else {
    print("usage: queue-benchmark <redis-url> [jobs (1000000)] [jobs to reserve and ack (200000)] [worker threads (8)]")
    exit(2)
}
let configuration = try RedisConfiguration(url: arguments[1])
let keys = try QueueKeys(prefix: "{rfbench-\(getpid())}")
let connection = try RedisConnection(configuration)
do {
    try measureEnqueue(JobQueue(connection: connection, keys: keys, consumer: "benchmark"), connection, jobCount: jobCount)
    measureReserveAndAck(configuration, keys, jobCount: min(reserveCount, jobCount), threads: threads)
    try deleteKeys(keys, connection)
} catch {
    print("benchmark failed: \(error)")
    try? deleteKeys(keys, connection)
    exit(1)
}
