import AppStore
import AppStoreSimulator
import ArgumentParser
import Fleet
import Foundation
import HTTPClient
import Lanes
import Ledger
import PostgresClient

/// `receiptfleet demo`
struct Demo: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the whole fleet on this machine against the App Store simulator, and show what it found.",
        discussion: """
            Uses the Redis and PostgreSQL servers configured as usual (scripts/demo starts throwaway \
            ones and passes them on), but never their data: it creates the database receiptfleet_demo \
            next to the configured one and uses the Redis prefix {rfdemo}. It starts the App Store \
            simulator, seeds simulated subscriptions of every lifecycle kind, and runs two nights: one \
            a month ago (the first sight of every subscription: a baseline, no events), then tonight, \
            when renewals, refunds, expiries, billing retries, plan changes … have happened and \
            become events. The scheduler, --workers worker processes and the relay do the work; \
            progress shows live, a summary follows. Everything it started stops at the end, and on \
            Ctrl-C.

            At the end the second night is checked against the simulator's ground truth: every job \
            done or dead (none lost), dead letters only for receipts Apple refuses for good, every \
            subscription's state equal to the truth at its verification, no event twice. The demo \
            exits 1 when the check fails. --fault makes something go wrong in the middle of the \
            second night (scripts/faults drills them all).

            Examples:
              scripts/demo                              (starts the servers, builds, runs this)
              receiptfleet demo --subscriptions 50000
              receiptfleet demo --keep-running          (leave the fleet up to explore, with the ops console)
              receiptfleet demo --backend server-api    (the App Store Server API instead of verifyReceipt)
              receiptfleet demo --fault kill-worker --json
              receiptfleet demo --fault restart-redis --restart-command 'scripts/services restart redis'
              receiptfleet demo --fault restart-redis-without-aof --restart-command 'scripts/services restart redis --lose-data'
              receiptfleet demo --fault freeze-postgres --server-pid-file .run/postgres/postmaster.pid
            """)

    @OptionGroup var options: FleetOptions

    @Option(help: "Simulated subscriptions to seed (receipts; a few hold two subscriptions).")
    var subscriptions = 10_000

    @Option(help: "Worker processes to start (the first also runs the relay).")
    var workers = 3

    @Option(name: .customLong("threads"), help: "Worker threads in each worker process.")
    var threads = 16

    @Option(help: "The simulator's port.")
    var simulatorPort = 19190

    @Option(help: "The simulator's response delay: 150ms±50ms, 5ms±5ms, 0ms.")
    var latency = "5ms±5ms"

    @Option(help: "Where the child processes' logs go.")
    var logDirectory = ".run/demo"

    @Flag(help: "Keep the fleet running after the summary, with the ops console, until Ctrl-C.")
    var keepRunning = false

    @Option(help: "The ops console's port with --keep-running.")
    var consolePort = 8081

    @Option(help: "Which of Apple's services the fleet asks: verify-receipt (receipts) or server-api (transaction ids, signed answers).")
    var backend = "verify-receipt"

    @Option(help: "Something to go wrong during the second night: \(DemoFault.allCases.map(\.rawValue).joined(separator: ", ")).")
    var fault: DemoFault?

    @Option(help: "How long an outage or a wrong shared secret lasts, in seconds.")
    var faultSeconds = 60.0

    @Option(help: "The shell command that restarts the server, for --fault restart-redis, restart-redis-without-aof and restart-postgres.")
    var restartCommand: String?

    @Option(help: "The file holding the server's process id (its first line), for --fault freeze-redis and freeze-postgres.")
    var serverPIDFile: String?

    @Flag(help: "Print the figures and the check as JSON on standard output (the summary goes to standard error).")
    var json = false

    func validate() throws {
        guard (1...5_000_000).contains(subscriptions) else { throw ValidationError("--subscriptions must be 1 to 5000000.") }
        guard (1...16).contains(workers) else { throw ValidationError("--workers must be 1 to 16.") }
        guard (1...256).contains(threads) else { throw ValidationError("--threads must be 1 to 256.") }
        guard Latency(parsing: latency) != nil else { throw ValidationError("--latency must look like 5ms±5ms, 0ms or 2s.") }
        if let problem = fault?.problem(restartCommand: restartCommand, serverPIDFile: serverPIDFile) {
            throw ValidationError(problem)
        }
        guard faultSeconds > 0 else { throw ValidationError("--fault-seconds must be more than 0.") }
        guard VerificationBackend(argument: backend) != nil else {
            throw ValidationError("--backend must be verify-receipt or server-api, not '\(backend)'.")
        }
    }

    func run() throws {
        let interrupted = StopSignal.onTerminationSignals()
        let configured = try options.settings()
        // The default limit suits Apple; the simulator on this machine takes far more.
        let rateLimit = try ResolvedConfiguration(options: options).value("rate-limit") == nil ? 1_500 : configured.rateLimit.perSecond
        let stage = try DemoStage(
            configured: configured, rateLimit: rateLimit, simulatorPort: simulatorPort,
            logDirectory: logDirectory, backend: VerificationBackend(argument: backend) ?? .verifyReceipt, interrupted: interrupted)
        defer { stage.stopAll() }
        stage.restartCommand = restartCommand
        stage.serverPIDFile = serverPIDFile

        say("preparing: database receiptfleet_demo, Redis prefix \(DemoStage.keyPrefix), simulator on port \(simulatorPort), "
            + "backend \(stage.settings.defaultBackend)")
        try stage.prepare()
        let monthAgo = Date().addingTimeInterval(-30 * 86_400)
        try stage.startSimulator(clockAt: monthAgo, latency: latency)
        // Up before the nights, so that its charts show them.
        let consoleToken = keepRunning ? try stage.startConsole(port: consolePort) : nil
        if let consoleToken {
            say("the ops console: http://127.0.0.1:\(consolePort)/console, operator token \(consoleToken)")
        }
        stage.drawFleet(count: subscriptions)
        try stage.addSubscriptions(boughtBy: monthAgo)

        say("night 1, a month ago: every subscription is seen for the first time (a baseline, no events)")
        let first = try stage.night(runID: "month-ago", now: Date(), startingWorkers: workers, threads: threads)
        say("night 2, tonight: a month of renewals, refunds, expiries and plan changes has happened")
        try stage.setSimulatorClock(to: Date())
        try stage.addSubscriptions(boughtBy: Date())  // the month's new customers: seen for the first time tonight
        // The checks planned in night 1 fall over the month; tonight's run takes every one of them.
        let second = try stage.night(
            runID: "tonight", now: Date().addingTimeInterval(31 * 86_400), startingWorkers: 0, threads: threads,
            fault: fault.map { ($0, faultSeconds) })

        let check = try stage.check()
        let summary = try stage.summary(nights: [("a month ago", first), ("tonight", second)]) + "\n" + check.text
        if json {
            FileHandle.standardError.write(Data((summary + "\n").utf8))
            let report = DemoReport(
                fault: fault?.rawValue ?? "none", subscriptions: stage.fleetSize, firstNightSeconds: first.seconds,
                secondNight: second.jobs, secondNightSeconds: second.seconds, faultFigures: stage.faultFigures, check: check)
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            print(String(decoding: try encoder.encode(report), as: UTF8.self))
        } else {
            print(summary)
        }
        if let consoleToken {
            say("the ops console: http://127.0.0.1:\(consolePort)/console, operator token \(consoleToken)")
            say("the fleet keeps running; Ctrl-C stops it")
            while interrupted.sleep(.seconds(3_600)) {}
        }
        if !check.passed { throw ExitCode(1) }
    }
}

/// `demo --json`: what scripts/faults tabulates.
struct DemoReport: Encodable {
    var fault: String
    var subscriptions: Int
    var firstNightSeconds: Double
    var secondNight: Int
    var secondNightSeconds: Double
    /// What the fault's steps measured, if anything.
    var faultFigures: [String: String]
    var check: DemoCheck

    enum CodingKeys: String, CodingKey {
        case fault, subscriptions, firstNightSeconds = "first_night_seconds", secondNight = "second_night_jobs"
        case secondNightSeconds = "second_night_seconds", faultFigures = "fault_figures", check
    }
}

func say(_ text: String) {
    FileHandle.standardError.write(Data("demo: \(text)\n".utf8))
}
