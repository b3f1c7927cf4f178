import Foundation
import TestSupport
import Testing

/// `receiptfleet demo` as a newcomer runs it: its summary reads right, and with --keep-running and
/// its output not a terminal, the summary and the commands to look further come before Ctrl-C.
@Suite struct DemoCommandTests {
    @Test func theDemoSummarisesTwoNightsAndLeavesCommandsThatWork() async throws {
        let logs = FileManager.default.temporaryDirectory.appendingPathComponent(uniqueName("demo-logs")).path
        let demo = try FleetProcess(
            ["demo", "--subscriptions", "300", "--workers", "2", "--threads", "4", "--simulator-port", "19390", "--metrics-port", "19400",
             "--console-port", "19410", "--log-directory", logs, "--keep-running"],
            environment: ["RECEIPTFLEET_REDIS_URL": TestServers.redisURL, "RECEIPTFLEET_POSTGRES_URL": TestServers.postgresURL])
        defer { demo.send(SIGKILL) }
        var waited = 0
        while !demo.log.contains("the fleet keeps running"), waited < 1_200, try await demo.exitStatus(within: .milliseconds(100)) == nil {
            waited += 1
        }
        let summary = demo.log
        #expect(summary.contains("PASSED"), "the summary came before Ctrl-C:\n\(summary.suffix(3_000))")
        // Why night 1 sees fewer subscriptions than were asked for.
        #expect(summary.contains("subscriptions on 300 receipts ==") && summary.contains("were bought by a month ago"))
        // Every count after its name, however long the name.
        #expect(summary.firstMatch(of: /price_increase_consent\d/) == nil, "\(summary)")
        // Apple's statuses with their meanings, and the webhook receiver's deliveries.
        #expect(summary.contains("  0 valid  ") && summary.contains("the receipt data was malformed"))
        #expect(summary.firstMatch(of: /-- webhook deliveries to http:\/\/127\.0\.0\.1:19390\/sink[^\n]*\n  delivered +\d+/) != nil, "\(summary)")
        #expect(summary.contains("a spell of garbage answers (a third of them, for 6 s) strikes") || summary.contains(#"{"garbage_rate": 0.3}"#))
        // Each night's jobs, verified and dead apart: tonight's garbage left some dead.
        let tonight = try #require(
            summary.firstMatch(of: /night tonight: (\d+) jobs in ([\d.]+) s: (\d+) verified, (\d+) dead; its last job settled ([\d.]+) s after/),
            "\(summary)")
        #expect(Int(tonight.3)! + Int(tonight.4)! == Int(tonight.1)! && Int(tonight.4)! > 0, "\(tonight.0)")
        // The night's time as the console shows it: from its pass's start to its last settled job, within the demo's own.
        #expect(Double(tonight.5)! > 0 && Double(tonight.5)! <= Double(tonight.2)!, "\(tonight.0)")
        // A few receipts got garbage every time: their jobs are dead letters, told apart by the check.
        #expect(summary.firstMatch(of: /dead [1-9]\d* \(0 for good input, [1-9]\d* from Apple's garbage: replay them\)/) != nil, "\(summary)")

        // The commands to look further paste and work: the environment file, then the binary's status.
        let environment = try String(contentsOfFile: logs + "/env", encoding: .utf8)
        let mode = try FileManager.default.attributesOfItem(atPath: logs + "/env")[.posixPermissions] as? Int
        #expect(mode == 0o600 && environment.contains("RECEIPTFLEET_KEY_PREFIX='{rfdemo}'"))
        #expect(!summary.contains("***") && !summary.contains("password="), "no password is printed")
        let status = try await onOwnThread {
            try runProgram("/bin/bash", ["-c", "set -a; . '\(logs)/env'; set +a; '\(FleetProcess.binary.path)' status"])
        }
        #expect(status.status == 0 && status.output.contains("queue "), "\(status.output)")
        // The customers have account ids, and the account lookup the summary offers finds one.
        let account = try #require(summary.firstMatch(of: /subscriptions show --account (user-\d{5})/)?.output.1, "\(summary)")
        let lookup = try await onOwnThread {
            try runProgram("/bin/bash", ["-c", "set -a; . '\(logs)/env'; set +a; '\(FleetProcess.binary.path)' subscriptions show --account \(account)"])
        }
        #expect(lookup.status == 0 && lookup.output.contains("account       \(account)"), "\(lookup.output)")

        demo.send(SIGINT)
        #expect(try await demo.exitStatus(within: .seconds(60)) == 0)
    }

    /// The demo's help is the demo's: its own options first and alone, every fleet setting taken
    /// but named in one sentence, so it reads on one screen or two.
    @Test func theDemosHelpShowsItsOwnOptions() async throws {
        let help = try await runFleetCommand(["demo", "--help"], environment: [:])
        #expect(help.status == 0)
        let options = help.output.components(separatedBy: "OPTIONS:").last ?? ""
        #expect(options.trimmingCharacters(in: .whitespacesAndNewlines).hasPrefix("--subscriptions"), "\(help.output)")
        #expect(!options.contains("--redis-url") && help.output.contains("config reference"), "\(help.output)")
        #expect(help.output.split(separator: "\n", omittingEmptySubsequences: false).count < 100)
        // Still taken: an invalid fleet setting is refused as one, not as an unknown option.
        let refused = try await runFleetCommand(["demo", "--rate-limit", "fast"], environment: [:])
        #expect(refused.status != 0 && refused.output.contains("rate-limit") && !refused.output.contains("Unknown option"), "\(refused.output)")
    }
}
