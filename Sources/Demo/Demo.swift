import AppStore
import AppStoreSimulator
import ArgumentParser
import Fleet
import FleetConfiguration
import Foundation
import HTTPClient
import Lanes
import Ledger
import PostgresClient
import Terminal

/// The options of `receiptfleet demo` that are the demo's own, and the demo: `run` plays its two
/// nights, in a process of its own (DemoOptions+Process). The command around it (its help, the
/// fleet's options) is the CLI's.
public struct DemoOptions: ParsableArguments, Sendable {
    @Option(help: "Simulated subscriptions to seed (receipts; a few hold two subscriptions).")
    var subscriptions = 10_000

    @Option(help: "Worker processes to start (the first also runs the relay).")
    var workers = 3

    @Option(name: .customLong("threads"), help: "Worker threads in each worker process.")
    var threads = 16

    @Option(help: "The simulator's port.")
    var simulatorPort = 19190

    @Option(help: "The first worker's metrics port; the others take the next ports.")
    var metricsPort = 9464

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

    public init() {}

    public func validate() throws {
        guard (1...5_000_000).contains(subscriptions) else { throw ValidationError("--subscriptions must be 1 to 5000000.") }
        guard (1...16).contains(workers) else { throw ValidationError("--workers must be 1 to 16.") }
        guard (1...256).contains(threads) else { throw ValidationError("--threads must be 1 to 256.") }
        guard Latency(parsing: latency) != nil else { throw ValidationError("--latency must look like 5ms±5ms, 0ms or 2s.") }
        if let problem = fault?.problem(restartCommand: restartCommand, serverPIDFile: serverPIDFile, backend: backend) {
            throw ValidationError(problem)
        }
        guard faultSeconds > 0 else { throw ValidationError("--fault-seconds must be more than 0.") }
        guard VerificationBackend(argument: backend) != nil else {
            throw ValidationError("--backend must be verify-receipt or server-api, not '\(backend)'.")
        }
    }

    /// Plays the two nights on the fleet's settings as configured (`configured`), at `rateLimit`
    /// requests a second, and prints the summary; stops everything it started at the first of
    /// `interrupted` (SIGTERM or SIGINT, through the process's service group). Throws `ExitCode(1)`
    /// when the check against the simulator's truth fails.
    func run(configured: FleetSettings, rateLimit: Double, interrupted: StopSignal) throws {
        let stage = try DemoStage(
            configured: configured, rateLimit: rateLimit, simulatorPort: simulatorPort,
            logDirectory: logDirectory, backend: VerificationBackend(argument: backend) ?? .verifyReceipt, interrupted: interrupted)
        defer { stage.stopAll() }
        stage.restartCommand = restartCommand
        stage.serverPIDFile = serverPIDFile
        stage.metricsPort = metricsPort

        say("preparing: database receiptfleet_demo, Redis prefix \(DemoStage.keyPrefix), simulator on port \(simulatorPort), "
            + "backend \(stage.settings.defaultBackend)")
        try stage.prepare()
        let monthAgo = Date().addingTimeInterval(-30 * 86_400)
        try stage.startSimulator(clockAt: monthAgo, latency: latency, fleetSize: subscriptions)
        // Up before the nights, so that its charts show them.
        let consoleToken = keepRunning ? try stage.startConsole(port: consolePort) : nil
        if let consoleToken {
            say("the ops console: http://127.0.0.1:\(consolePort)/console, operator token \(consoleToken)")
        }
        // Without a fault asked for, an ordinary night's extras: a webhook receiver, and a spell of garbage.
        if fault == nil { try stage.addWebhookEndpoint() }
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
            fault: fault.map { ($0, faultSeconds) }, garbageSpell: fault == nil)

        var check = try stage.check()
        if fault == .notificationOutage { try stage.missNotifications(for: faultSeconds) }
        if let problem = stage.notificationProblem {
            check.mismatches += 1
            check.mismatchExamples.append(problem)
        }
        let summary = try stage.summary(nights: [("a month ago", first), ("tonight", second)]) + "\n" + check.text + "\n\n"
            + stage.lookFurther(keepRunning: keepRunning)
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
        // Now, not at exit: with --keep-running a piped or redirected output would wait for Ctrl-C.
        fflush(nil)  // every output stream: standard output among them
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
    FileHandle.standardError.write(Data(ProgressLine.wholeLine("demo: \(text)").utf8))
}
