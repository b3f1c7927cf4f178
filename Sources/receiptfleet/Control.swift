import ArgumentParser
import Fleet
import FleetConfiguration
import JobQueue
import Operations

/// `receiptfleet pause`
struct Pause: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Halt verification across the whole fleet until `resume`.",
        discussion: """
            Workers stop calling Apple and keep their jobs, uncharged, until an operator resumes. The \
            fleet halts by itself the same way on a configuration error (wrong shared secret: 21004).

            Examples:
              receiptfleet pause --reason "Apple maintenance window"
            """)

    @OptionGroup var options: FleetOptions

    @Option(help: "Why, for `status` and the alert (never put a secret here).")
    var reason = "paused by an operator"

    func run() throws {
        let settings = try options.settings()
        try audited("fleet.pause", details: ["reason": reason], settings: settings) { try FleetGate.connecting(settings).halt(reason: reason) }
        print("The fleet is halted: \(reason). Resume with `receiptfleet resume`.")
    }
}

/// `receiptfleet resume`
struct Resume: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Lift a halt (and any pause): workers call Apple again.",
        discussion: """
            Without --app it lifts everything: the fleet's halt, the Server API's, and every app's. \
            With --app it lifts that app's halt alone (a 21004: its shared secret was refused), once \
            its secret is fixed. Either way the jobs the halt postponed go at once (not up to 30 s \
            later), and the dead letters of receipts that answered the halt's error alone, before it \
            was certain, go back to the queue.

            Examples:
              receiptfleet resume
              receiptfleet resume --app photos
            """)

    @OptionGroup var options: FleetOptions

    @Option(help: "Lift only this app's halt (a name from apps-file, or `default`).")
    var app: String?

    func run() throws {
        let settings = try options.settings()
        if let app { _ = try settings.apps.resolve(app) }
        let resumed = try audited("fleet.resume", target: app.map { "app:\($0)" }, settings: settings, results: \.results) {
            try resumeFleet(settings: settings, app: app)
        }
        print(app.map { "The app \($0) is running." } ?? "The fleet is running.")
        if resumed.broughtForward > 0 { print("\(resumed.broughtForward) waiting jobs the halt postponed go now.") }
        if resumed.replayed > 0 { print("Replayed \(resumed.replayed) dead letters of receipts that answered the halt's error alone before it.") }
    }
}
