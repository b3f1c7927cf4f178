import Foundation
import Testing

@Suite("systemd units: systemd-analyze verify, the sandbox, graceful stop")
struct SystemdUnitTests {
    /// What `systemd-analyze` is given: every unit, the worker template through one instance.
    static let units = [
        "receiptfleet-worker@9471.service", "receiptfleet-relay.service", "receiptfleet-api.service",
        "receiptfleet-schedule.service", "receiptfleet-schedule.timer", "receiptfleet-prune.service",
        "receiptfleet-prune.timer", "receiptfleet-notifications.service", "receiptfleet-notifications.timer",
        "receiptfleet-migrate.service", "receiptfleet-console.service", "receiptfleet.target",
    ]
    static let services = units.filter { $0.hasSuffix(".service") }
    /// The default `drain-grace`: how long a worker may take to finish its jobs after SIGTERM.
    static let drainGrace = 25.0

    @Test func verifyFindsNothingToSay() async throws {
        let result = try await verify(try Self.checkableCopy())
        #expect(result.succeeded && result.output.isEmpty, "\(result)")
    }

    /// The sandbox (from the shared drop-in) keeps every service's exposure low: `systemd-analyze
    /// security` scores 0 (locked down) to 10 (unprotected); the threshold is in tenths.
    @Test(arguments: services)
    func theSandboxIsTight(unit: String) async throws {
        let folder = try Self.checkableCopy()
        let result = try await systemdAnalyze(
            ["security", "--offline=yes", "--threshold=20", folder.appendingPathComponent(unit).path])
        #expect(result.succeeded, "\(unit) is exposed: \(result.output.split(separator: "\n").last ?? "")")
    }

    /// How long each long-running process may take to stop after SIGTERM: a worker its drain grace
    /// plus 5 s for the relay it may run (Worker.swift), the relay 20 s (Relay.swift).
    static let stopTimes: [String: Double] = [
        "receiptfleet-worker@.service": drainGrace + 5, "receiptfleet-relay.service": 20, "receiptfleet-api.service": 0,
        "receiptfleet-console.service": 0,
    ]

    @Test(arguments: stopTimes.keys.sorted())
    func longRunningServicesStopGracefully(unit: String) throws {
        let settings = try unitSettings(Repository.url("deploy/systemd/" + unit))
        #expect(settings["KillSignal"] == ["SIGTERM"])
        let stop = try #require(settings["TimeoutStopSec"]?.last, "no TimeoutStopSec")
        let seconds = try #require(Double(stop.replacingOccurrences(of: "s", with: "")), "TimeoutStopSec \(stop)")
        #expect(seconds > Self.stopTimes[unit]!, "TimeoutStopSec \(stop) leaves no time to finish")
        #expect(settings["Restart"] == ["on-failure"])
    }

    @Test func theWorkerInstanceNamesItsMetricsPort() throws {
        let settings = try unitSettings(Repository.url("deploy/systemd/receiptfleet-worker@.service"))
        #expect(settings["Environment", default: []].contains("RECEIPTFLEET_METRICS_ADDRESS=127.0.0.1:%i"))
        #expect(settings["LoadCredential", default: []].contains("shared-secret:/etc/receiptfleet/shared-secret"))
        #expect(settings["Environment", default: []].contains("RECEIPTFLEET_SHARED_SECRET_FILE=%d/shared-secret"))
    }

    @Test func theAPIGetsItsTokensAsACredential() throws {
        let settings = try unitSettings(Repository.url("deploy/systemd/receiptfleet-api.service"))
        #expect(settings["LoadCredential", default: []].contains("api-tokens:/etc/receiptfleet/api-tokens"))
        #expect(settings["Environment", default: []].contains("RECEIPTFLEET_API_TOKENS_FILE=%d/api-tokens"))
    }

    @Test func theConsoleGetsItsOperatorTokensAsACredential() throws {
        let settings = try unitSettings(Repository.url("deploy/systemd/receiptfleet-console.service"))
        #expect(settings["ExecStart"]?.first?.contains(" console ") == true)
        #expect(settings["LoadCredential", default: []].contains("console-tokens:/etc/receiptfleet/console-tokens"))
        #expect(settings["Environment", default: []].contains("RECEIPTFLEET_CONSOLE_TOKENS_FILE=%d/console-tokens"))
    }

    /// The scheduler at the default nightly-hour, retention after it, and the notifications'
    /// recovery every six hours; each catches up a missed run.
    @Test(arguments: [("receiptfleet-schedule.timer", "*-*-* 02:00:00 UTC"), ("receiptfleet-prune.timer", "*-*-* 03:30:00 UTC"),
                      ("receiptfleet-notifications.timer", "*-*-* 00/6:15:00 UTC")])
    func theTimersRunDailyAndCatchUp(timer: String, calendar: String) throws {
        let settings = try unitSettings(Repository.url("deploy/systemd/" + timer))
        #expect(settings["OnCalendar"] == [calendar])
        #expect(settings["Persistent"] == ["true"])
        #expect(settings["RandomizedDelaySec"]?.isEmpty == false)
    }

    /// verifyFindsNothingToSay would notice a mistake: an unknown setting in the shared drop-in.
    @Test func aMistakeInTheDropInIsReported() async throws {
        let folder = try Self.checkableCopy()
        let dropIn = folder.appendingPathComponent("receiptfleet-.service.d/10-receiptfleet.conf")
        try (try String(contentsOf: dropIn, encoding: .utf8) + "ProtectSystems=strict\n").write(to: dropIn, atomically: true, encoding: .utf8)
        let result = try await verify(folder)
        #expect(result.output.contains("Unknown key"), "\(result)")
    }

    /// A copy of deploy/systemd in which ExecStart runs /usr/bin/true: `systemd-analyze verify`
    /// refuses a unit whose program does not exist, and /usr/local/bin/receiptfleet is installed
    /// only where the fleet runs. Everything else is checked as written.
    static func checkableCopy() throws -> URL {
        let folder = try Repository.copy("deploy/systemd")
        for file in try Repository.files(in: folder, endingIn: [".service"]) {
            let text = try String(contentsOf: file, encoding: .utf8)
            #expect(text.contains("ExecStart=/usr/local/bin/receiptfleet "), "\(file.lastPathComponent) runs something else")
            try text.replacingOccurrences(of: "ExecStart=/usr/local/bin/receiptfleet ", with: "ExecStart=/usr/bin/true ")
                .write(to: file, atomically: true, encoding: .utf8)
        }
        return folder
    }

    func verify(_ folder: URL) async throws -> CommandResult {
        try await systemdAnalyze(["verify", "--man=no"] + Self.units.map { folder.appendingPathComponent($0).path })
    }
}

func systemdAnalyze(_ arguments: [String]) async throws -> CommandResult {
    try await run("systemd-analyze", arguments, from: "Debian's systemd package")
}

/// A unit file's settings by name, every value in order (systemd allows some settings several times).
func unitSettings(_ url: URL) throws -> [String: [String]] {
    var settings: [String: [String]] = [:]
    for line in try String(contentsOf: url, encoding: .utf8).split(separator: "\n") {
        guard !line.hasPrefix("#"), !line.hasPrefix("["), let equals = line.firstIndex(of: "=") else { continue }
        settings[String(line[..<equals]), default: []].append(String(line[line.index(after: equals)...]))
    }
    return settings
}
