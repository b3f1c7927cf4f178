import ArgumentParser
import Demo
import FleetConfiguration
import FleetFlags

/// `receiptfleet demo`: the command line of the demo, which is the `Demo` target's. Its own options
/// (`DemoOptions`) and all it does live there; here are its help and the fleet's options.
struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
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

            Every fleet setting is taken too, as a flag, RECEIPTFLEET_<NAME> or in --config \
            (--redis-url and --postgres-url above all); `receiptfleet config reference` lists them.

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

    @OptionGroup var demo: DemoOptions

    /// Taken as by every command, but left out of this help, which is the demo's own: the demo
    /// needs none of them beyond the servers its script hands it.
    @OptionGroup(visibility: .private) var options: FleetOptions

    func run() async throws {
        let configured = try options.settings()
        // The default limit suits Apple; the simulator on this machine takes far more.
        let rateLimit = try ResolvedConfiguration(flags: options).value("rate-limit") == nil ? 1_500 : configured.rateLimit.perSecond
        try await demo.run(configured: configured, rateLimit: rateLimit)
    }
}
