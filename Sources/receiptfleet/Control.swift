import ArgumentParser
import Fleet
import JobQueue
import RedisClient

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
        try gate(options).halt(reason: reason)
        print("The fleet is halted: \(reason). Resume with `receiptfleet resume`.")
    }
}

/// `receiptfleet resume`
struct Resume: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Lift a halt (and any pause): workers call Apple again.",
        discussion: """
            Examples:
              receiptfleet resume
            """)

    @OptionGroup var options: FleetOptions

    func run() throws {
        let replayed = try resumeFleet(settings: try options.settings())
        print("The fleet is running.")
        if replayed > 0 { print("Replayed \(replayed) dead letters of receipts that answered the halt's error alone before it.") }
    }
}

private func gate(_ options: FleetOptions) throws -> FleetGate {
    let settings = try options.settings()
    return FleetGate(
        connection: try RedisConnection(settings.redisConfiguration()),
        keys: try QueueKeys(prefix: settings.keyPrefix), limit: settings.rateLimit)
}
