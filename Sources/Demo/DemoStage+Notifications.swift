import ArgumentParser
import FleetConfiguration
import Foundation
import HTTPClient
import PostgresClient

/// The notification-outage fault, played after night 2 and its check: `serve` is down while Apple
/// sends two days of V2 notifications, and `notifications recover` brings in what it missed.
extension DemoStage {
    /// Starts `serve`, points the simulator's notifications at it, stops it, moves the simulator's
    /// clock two days on (the notifications those days send all fail), waits `seconds`, starts
    /// `serve` again and recovers what it missed; then checks that the ledger holds every
    /// notification the simulator sent, once (`notificationProblem` says otherwise).
    func missNotifications(for seconds: Double) throws {
        try startServe()
        try control("/control/notifications", #"{"url": "http://127.0.0.1:\#(servePort)/v1/notifications/apple"}"#)
        stop(named: "serve")
        let from = Date()
        say("fault notification-outage: serve is down while Apple sends two days of notifications")
        try control("/control/clock", #"{"advance_seconds": \#(2 * 86_400)}"#)
        let counts = try JSONSerialization.jsonObject(with: Data(HTTPClient().get(url: simulatorBase + "/control/notifications").body))
            as? [String: Any] ?? [:]
        let (sent, failed) = (counts["sent"] as? Int ?? -1, counts["failed"] as? Int ?? -1)
        try pause(.seconds(seconds))
        try startServe()
        say("serve is back; `notifications recover --only-failures` brings in what it missed")
        let window = [from.addingTimeInterval(-60), from.addingTimeInterval(3 * 86_400)].map { $0.formatted(.iso8601) }
        let recovery = try run("recover", ["notifications", "recover", "--only-failures", "--since", window[0], "--until", window[1]])
        // What Apple's history held: the failed ones, and any of the minute before that none tried to send.
        let report = (try? String(contentsOf: logDirectory.appendingPathComponent("recover.log"), encoding: .utf8)) ?? ""
        let found = report.split(separator: "\n").first { $0.hasPrefix("Brought in ") }
            .flatMap { $0.split(separator: " ").dropFirst(4).first.flatMap { Int($0) } } ?? -1
        let postgres = try PostgresConnection(configuration: demoPostgres)
        let held = try postgres.query("SELECT count(*) AS n, count(DISTINCT dedupe_key) AS d FROM notifications WHERE version = 2")
        let (rows, distinct) = (Int(try held[0]["n"].int64() ?? 0), Int(try held[0]["d"].int64() ?? 0))
        faultFigures["notifications_missed"] = "\(failed)"
        faultFigures["notifications_recovered"] = "\(found)"
        faultFigures["notifications_in_ledger"] = "\(rows)"
        if recovery != 0 || sent != 0 || failed <= 0 || found < failed || rows != found || distinct != rows {
            notificationProblem = "notifications: \(failed) sent while serve was down (\(sent) delivered), \(found) recovered, "
                + "\(rows) in the ledger (\(distinct) distinct), recover exited \(recovery); see \(logDirectory.path)/recover.log"
        }
    }

    /// Where the demo's `serve` listens: beside the simulator, so that drills running side by side
    /// (scripts/test) each have their own.
    var servePort: Int { simulatorPort + 5 }

    /// Starts `serve` with a token of its own (the demo asks it nothing but Apple's notifications)
    /// and waits until it answers.
    private func startServe() throws {
        let token = (0..<4).map { _ in String(format: "%016llx", UInt64.random(in: 0...UInt64.max)) }.joined()
        try start("serve", ["serve", "--address", "127.0.0.1:\(servePort)"], environment: [
            Settings.apiTokens: "demo:\(token)", Settings.notificationEnvironments: "Production,Sandbox",
            Settings.metricsAddress: "127.0.0.1:0",
        ])
        let http = try HTTPClient()
        for _ in 0..<100 {
            if (try? http.get(url: "http://127.0.0.1:\(servePort)/v1/subscriptions/1"))?.status == 401 { return }
            try pause(.milliseconds(100))
        }
        throw ValidationError("serve did not start on port \(servePort); see \(logDirectory.path)/serve.log")
    }

    /// Stops the child `name` with SIGTERM, as a deployment stops a process, and forgets it.
    private func stop(named name: String) {
        let stopped = children.filter { $0.name == name }.map(\.process)
        stop(stopped)
        children.removeAll { $0.name == name }
    }

    /// Runs `receiptfleet arguments…` to its end with the demo's settings (its output in `name`.log)
    /// and returns its exit status.
    private func run(_ name: String, _ arguments: [String]) throws -> Int32 {
        try start(name, arguments, environment: [Settings.notificationEnvironments: "Production,Sandbox"])
        let process = children.removeLast().process
        process.waitUntilExit()
        return process.terminationStatus
    }
}
