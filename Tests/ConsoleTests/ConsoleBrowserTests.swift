import AppStoreSimulator
import EventRelay
import Fleet
import Foundation
import JobQueue
import RedisClient
import TestSupport
import Testing

/// The console in Debian's chromium, driven by Selenium (Tests/Browser/console_browser.py): log in,
/// the queue as `receiptfleet status --json` reads it, a night's two scheduler passes under its totals,
/// pause and resume with the buttons, a halt from the terminal showing on the open overview, the queues
/// one by one, dead letters one compact line each, replay one, find some by their text, replay two
/// ticked and purge one, a worker process stopped with SIGSTOP holding a job, retry a waiting job, send
/// one to the dead letters, delete the waiting jobs of a run all at once, look a subscription up (by its
/// ids, an account id, and the order id on Apple's receipt email) and see what the queue holds for it,
/// the fleet's timings; every page at 1280 px and 375 px without sideways scrolling, with screenshots
/// under .run/console-screenshots for review.
///
/// The console reads its "now" from a driven clock (`QueueKeys.drivenClock`), which the test sets past
/// the stopped worker's last heartbeat by more than the silence that marks a process stopped
/// (`Heartbeat.silentAfter`), instead of waiting that long; every other process keeps Redis's clock.
@Suite struct ConsoleBrowserTests {
    static var python: String {
        let environment = ProcessInfo.processInfo.environment
        let cache = environment["XDG_CACHE_HOME"] ?? (environment["HOME"] ?? "/root") + "/.cache"
        return (environment["RECEIPTFLEET_TOOLS"] ?? cache + "/receiptfleet") + "/venv/bin/python"
    }

    @Test func anOperatorWorksTheFleetFromTheBrowser() async throws {
        for program in [Self.python, "/usr/bin/chromium", "/usr/bin/chromedriver"] {
            try #require(FileManager.default.isExecutableFile(atPath: program), "\(program) is missing: run scripts/bootstrap")
        }
        try await ConsoleHarness.with(
            sampleInterval: .seconds(1), serverAPI: true, consoleClock: .driven,
            configureFleet: { $0.visibilityTimeout = .seconds(600) }  // the stopped worker's lease outlasts the browser's visit
        ) { console in
            // First, while the queue is empty: a real worker process, stopped while Apple kept its one job, of the
            // subscription the browser looks up.
            let original = console.firstOriginalTransactionID
            let held = try await console.onLedger { try $0.subscriptions(originalTransactionID: original)[0].id }
            let stopped = try await console.aStoppedWorker(holding: held)
            defer { stopped.process.send(SIGKILL) }
            // A night of two scheduler passes: the first's jobs all verified, so the second queues their
            // subscriptions again, and its first job dead, as a worker buries a receipt Apple rejects for good.
            let fleet = console.fleet
            let first = try await onOwnThread { try Scheduler(settings: fleet).run(Scheduler.Options(night: "console-test"), now: Date()) }
            try await console.onQueue { queue in
                let reserved = try queue.reserve(count: first.enqueued, block: .zero)
                try #require(reserved.count == first.enqueued && reserved.allSatisfy { $0.job.runID == first.passID })
                _ = try queue.ack(reserved)
            }
            let second = try await onOwnThread { try Scheduler(settings: fleet).run(Scheduler.Options(night: "console-test"), now: Date()) }
            try #require(second.passID == "console-test/2" && second.found == first.found && second.enqueued == first.enqueued && second.enqueued > 1)
            let letter = try await console.onQueue { queue in
                try queue.bury(try queue.reserve(count: 1, block: .zero)[0],
                               failure: JobFailure(errorClass: "apple.21010", message: "the account was not found"))
                return try queue.deadLetters()[0].id
            }
            let record = try await console.subscriptionWithHistory()
            try await console.onLedger { _ = try $0.linkAccount("browser-account-1", to: [record.id]) }
            let order = try #require(UInt64(record.originalTransactionID).flatMap(SimulatedOrder.orderID(ofTransactionID:)))
            // More dead letters than a page holds, of another kind.
            try await console.onQueue { queue in
                // Manual jobs take the high-priority stream, which reserve reads first: these 104 alone.
                try queue.enqueue(subscriptionIDs: Array(5_001...5_104), run: "browser-paging", reason: .manual)
                for job in try queue.reserve(count: 104, block: .zero) {
                    try queue.bury(job, failure: JobFailure(errorClass: "timeout", message: "no answer within 30 s, five times"))
                }
            }
            // Three letters that say Apple was unavailable, which the browser finds by that text whatever its case.
            let searched = try await console.onQueue { queue in
                try queue.enqueue(subscriptionIDs: [7_001, 7_002, 7_003], run: "browser-search", reason: .manual)
                for job in try queue.reserve(count: 3, block: .zero) {
                    try queue.bury(job, failure: JobFailure(errorClass: "http.503", message: "Apple answered 503 Service Unavailable, five times"))
                }
                return try queue.deadLetters(matching: DeadLetterFilter(runID: "browser-search")).map(\.id)
            }
            // What the queue holds for the looked-up subscription beside its nightly job: a notification's job
            // dead, a check due in an hour.
            try await console.onQueue { queue in
                try queue.enqueue(subscriptionID: record.id, run: "browser-subscription", reason: .notification)
                try queue.bury(try queue.reserve(count: 1, block: .zero)[0],
                               failure: JobFailure(errorClass: "apple.21002", message: "the receipt data was malformed"))
                let later = Int64(Date().timeIntervalSince1970 * 1000) + 3_600_000
                try queue.schedule(Job(subscriptionID: record.id, runID: "push", reason: .notification, enqueuedAt: later), at: later)
            }
            // A job waiting for its retry.
            try await console.onQueue { queue in
                try queue.enqueue(subscriptionIDs: [6_001], run: "browser-waiting", reason: .manual)
                let job = try #require(try queue.reserve(count: 1, block: .zero).first)
                _ = try queue.retry(job, after: JobFailure(errorClass: "timeout", message: "no answer"))
                // One more, which the browser sends to the dead letters.
                try queue.enqueue(subscriptionIDs: [6_201], run: "browser-bury", reason: .manual)
                let another = try #require(try queue.reserve(count: 1, block: .zero).first)
                _ = try queue.retry(another, after: JobFailure(errorClass: "timeout", message: "no answer"))
                // Three more of one run, which the browser deletes all at once by their run.
                try queue.enqueue(subscriptionIDs: [6_101, 6_102, 6_103], run: "browser-bulk", reason: .manual)
                for job in try queue.reserve(count: 3, block: .zero) {
                    _ = try queue.retry(job, after: JobFailure(errorClass: "timeout", message: "no answer"))
                }
            }
            _ = try await console.onOwnDatabase { database in
                try WebhookRegistry.local(database).add(url: "http://127.0.0.1:9/hooks", eventTypes: ["renewed", "refunded"])
            }
            // The fleet's timings as the processes report them: this minute, and a day ago.
            try await onOwnThread {
                let timings = FleetTimings(connection: try RedisConnection(fleet.redisConfiguration()), keys: try QueueKeys(prefix: fleet.keyPrefix))
                var (calls, statuses, jobs, older) = (TimingHistogram(), TimingHistogram(), TimingHistogram(), TimingHistogram())
                for index in 0..<120 { calls.record(.milliseconds(80 + index * 5)) }
                for index in 0..<40 { statuses.record(.milliseconds(300 + index * 40)) }
                for index in 0..<60 { jobs.record(.seconds(5 + index)) }
                for index in 0..<30 { older.record(.seconds(10_800 + index * 120)) }
                let now = Int64(Date().timeIntervalSince1970 * 1000)
                try timings.add(["verify_receipt": calls, "subscription_statuses": statuses, "jobs": jobs], at: now)
                try timings.add(["jobs": older], at: now - 86_400_000)
            }
            // The charts' last hour: a pass of 6,000 jobs queued 45 minutes ago, done at about 280 a minute.
            _ = try await console.replaceMinuteSamples(60) { minute in
                let verified = max(0, min(6_000, (minute - 14) * 280))
                let waiting = minute < 15 ? 0 : 6_000 - verified
                let (retried, died) = (verified / 40, verified / 1_000)
                let held = waiting > 0 ? 16 : 0
                return "\(waiting) \(held) \(held) \(died) \(verified + retried) \(verified) \(retried) \(died)|\(waiting > 0 ? "0:273,21005:7" : "")"
            }
            // The console's clock past the stopped worker's last heartbeat by more than a stopped process's
            // silence; and a live worker process's heartbeat on that clock, which stands still: fresh however
            // long the browser takes.
            try await onOwnThread {
                let redis = try RedisConnection(fleet.redisConfiguration())
                let keys = try QueueKeys(prefix: fleet.keyPrefix)
                let ahead = Int64((Heartbeat.silentAfter + .seconds(5)).components.seconds) * 1_000_000
                try redis.command("SET", keys.drivenClock, try redis.redisMicroseconds() + ahead)
                let live = try JobQueue(connection: redis, keys: keys, consumer: JobQueue.consumerName(thread: 91), clock: .driven)
                try live.reportProcess(WorkerProcess(
                    name: JobQueue.processName, host: JobQueue.hostName, pid: 4242, threads: 4,
                    startedAt: Int64(Date().timeIntervalSince1970 * 1000) - 3_600_000, jobsDone: 1_660))
            }
            var environment = ProcessInfo.processInfo.environment.merging(console.fleet.processEnvironment) { $1 }
            environment.merge([
                "CONSOLE_URL": console.baseURL(), "CONSOLE_TOKEN": console.operatorToken, "CONSOLE_OPERATOR": "ops-alice",
                "DEAD_LETTER_ID": letter, "DEAD_LETTERS": "109", "SEARCHED_LETTERS": searched.joined(separator: ","),
                "PASS_DUE": "\(first.found)", "PASS_JOBS": "\(first.enqueued)",
                "SUBSCRIPTION_ID": "\(record.id)", "SUBSCRIPTION_OTID": console.firstOriginalTransactionID,
                "ACCOUNT_ID": "browser-account-1", "ORDER_ID": order, "ORDER_SUBSCRIPTION_ID": "\(record.id)",
                "TIMED_CALLS": "120", "TIMED_JOBS_WEEK": "90",
                "STOPPED_WORKER": stopped.name, "STOPPED_SUBSCRIPTION": "\(held)", "LIVE_WORKER": JobQueue.processName,
                "RECEIPTFLEET_BINARY": FleetProcess.binary.path, "RECEIPTFLEET_LOG_LEVEL": "error",
                "SCREENSHOTS": TestServers.repositoryRoot + "/.run/console-screenshots",
            ]) { $1 }
            let script = TestServers.repositoryRoot + "/Tests/Browser/console_browser.py"
            let sent = environment
            let (status, output) = try await onOwnThread {
                try runProgram("/usr/bin/timeout", ["300", Self.python, script], environment: sent)
            }
            #expect(status == 0, "the browser test failed (screenshots in .run/console-screenshots):\n\(output.suffix(4_000))")
        }
    }
}
