import APIService
import AppStore
import ArgumentParser
import Fleet
import FleetConfiguration
import FleetFlags
import Foundation
import Operations
import Terminal

/// `receiptfleet notifications recover`
struct Notifications: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "App Store Server Notifications that never reached serve, from Apple's history.",
        discussion: "See docs/appstore-server-api.md.",
        subcommands: [Recover.self, Test.self])

    struct Recover: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Bring in the V2 notifications Apple sent while serve could not take them.",
            discussion: """
                Pages through Get Notification History (the App Store Server API, with the app's \
                server-api-key) for each app and each of notification-environments, and hands every \
                notification the ledger does not hold yet (by its notificationUUID) to the same intake as \
                POST /v1/notifications/apple: verified against Apple's root, recorded once, its signed \
                data applied, its subscription's check queued for the workers. Running it again, or over \
                notifications serve did take, changes nothing. Apple keeps 180 days of history in \
                production and 30 in the sandbox: an earlier --since reads what it keeps, and says so. \
                Each page prints a progress line; a run (not a dry \
                one) is recorded in the audit trail (notifications.recover), where status and the console \
                read when it last ran. With --resume a run starts where the last recorded one that read \
                as much ended (an hour before), when that is later than --since: the six-hourly timer \
                reads only what is new.

                Examples:
                  receiptfleet notifications recover --since 72h
                  receiptfleet notifications recover --since 2026-11-24T02:00:00Z --until 2026-11-24T06:00:00Z
                  receiptfleet notifications recover --since 7d --only-failures --app journal
                  receiptfleet notifications recover --since 30d --dry-run
                  receiptfleet notifications recover --since 8d --only-failures --resume
                """)

        @OptionGroup var options: FleetOptions
        @Option(help: "From when: how long ago (72h, 7d), a day (2026-11-24) or a time (2026-11-24T02:00:00Z).")
        var since: String
        @Option(help: "Until when, as --since; now by default.") var until: String?
        @Option(help: "Only this app (its name in apps-file); every app by default.") var app: String?
        @Flag(help: "Only the notifications Apple never delivered (its onlyFailures).") var onlyFailures = false
        @Flag(help: "Count what would be brought in; change nothing.") var dryRun = false
        @Flag(help: "Start where the last recorded run that read as much ended, an hour before, if after --since.") var resume = false

        func run() async throws {
            let (logger, resolved, fleet) = try options.setUp(unset: .warning, serverAPIFor: "Apple's notification history is read")
            let now = fleet.processClock().now()
            let start = try sinceArgument(since, now: now)
            let end = try until.map { try sinceArgument($0, flag: "--until", now: now) } ?? now
            guard start < end else { throw ValidationError("--since must be before --until.") }
            let app = try fleet.apps.named(app)
            let recovery = try NotificationRecovery(fleet: fleet, configuration: resolved, logger: logger)
            var progress = ProgressLine()
            let tally = try await recovery.run(
                app: app, from: start, until: end, onlyFailures: onlyFailures, dryRun: dryRun, resume: resume, actor: osUser()
            ) { event in
                switch event {
                case .note(let line): print(line)
                case .progress(let line): progress.show(line)
                case .read:
                    progress.finish()
                    progress = ProgressLine()
                case .problem(let line): FileHandle.standardError.write(Data((line + "\n").utf8))
                }
            }
            print(tally.summary(dryRun: dryRun))
            if tally.refused > 0 { throw ExitCode(1) }
        }
    }
}

extension Notifications {
    /// `receiptfleet notifications test`
    struct Test: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Have Apple send a test notification, and say whether it reached this deployment's serve.",
            discussion: """
                Asks Apple for a TEST notification (Request a Test Notification, with the app's \
                server-api-key), waits for Apple's attempts to send it to the server URL App Store Connect \
                names (Get Test Notification Status), and looks it up in the ledger by its notificationUUID: \
                the setup check to run after pointing Apple at a new URL. Exits 0 when serve recorded it, \
                1 when Apple could not deliver it or it reached some other server, with what to check.

                Examples:
                  receiptfleet notifications test
                  receiptfleet notifications test --app journal --environment Sandbox
                  receiptfleet notifications test --wait 120
                """)

        @OptionGroup var options: FleetOptions
        @Option(help: "The app (its name in apps-file); the only one by default.") var app: String?
        @Option(help: "Production or Sandbox: whose server URL is tested.") var environment = AppStoreEnvironment.production
        @Option(help: "Seconds to wait for Apple's first attempt.") var wait = 60

        func run() async throws {
            let (logger, resolved, fleet) = try options.setUp(unset: .warning, serverAPIFor: "Apple is asked for a test notification")
            guard wait > 0 else { throw ValidationError("--wait must be at least 1 second.") }
            let app = try fleet.apps.named(app)
            let test = try NotificationTest(fleet: fleet, configuration: resolved, logger: logger)
            let progress = ProgressLine()
            let outcome = try await test.run(app: app, environment: environment, wait: wait) { event in
                switch event {
                case .requested(let token): print("Apple is sending a test notification to the \(environment.rawValue) server URL (token \(token)).")
                case .waiting(let waited): progress.show("test: waiting for Apple's first attempt (\(waited) s of \(wait))")
                case .waited: progress.finish()
                }
            }
            print("Apple's attempts: " + (outcome.attempts.isEmpty ? "none yet" : outcome.attempts.joined(separator: ", ")))
            print(outcome.verdict)
            if !outcome.reached { throw ExitCode(1) }
        }
    }
}
