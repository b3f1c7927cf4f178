import ArgumentParser
import FleetConfiguration
import JobQueue
import Operations

/// `receiptfleet waiting list|retry|delete|bury`
struct Waiting: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Look at the jobs waiting for a time, retry them now, delete them or send them to the dead letters.",
        discussion: """
            Jobs wait for a time after a failure (their backoff), when a pause postponed them, or as \
            checks scheduled for later. Retry makes them due now (their attempts kept); delete drops \
            this occurrence only (a subscription's next sweep queues it again when it is due); bury \
            sends them to the dead letters (error class operator). Each change is audited.

            Examples:
              receiptfleet waiting list
              receiptfleet waiting retry --subscription 42
              receiptfleet waiting delete --subscription 42 --subscription 43
              receiptfleet waiting bury --all
            """,
        subcommands: [List.self, Retry.self, Delete.self, Bury.self])

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List waiting jobs, the soonest due first.")
        @OptionGroup var options: FleetOptions
        @Option(help: "At most this many.") var limit = 100

        func run() throws {
            let jobs = try options.settings().operatorQueue().delayedJobs(limit: min(max(limit, 1), 1_000))
            if jobs.isEmpty { print("No job waits for a time.") }
            for item in jobs { print(item.line) }
        }
    }
}

extension Waiting {
    /// The waiting jobs a change is about: the subscriptions named, or all.
    struct Targets: ParsableArguments {
        @OptionGroup var options: FleetOptions
        @Option(help: "The waiting jobs of these subscription ids (repeat the option).") var subscription: [Int64] = []
        @Flag(help: "Every waiting job (1,000 at a time).") var all = false

        func act(_ action: WaitingJobAction) throws {
            guard all != !subscription.isEmpty else { throw ValidationError("Name --subscription ids, or --all.") }
            print(try actOnWaitingJobs(action, subscriptions: subscription, settings: options.settings()))
        }
    }

    struct Retry: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Make waiting jobs due now; they keep their attempts.")
        @OptionGroup var targets: Targets
        func run() throws { try targets.act(.retryNow) }
    }

    struct Delete: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Delete waiting jobs: this occurrence only.")
        @OptionGroup var targets: Targets
        func run() throws { try targets.act(.delete) }
    }

    struct Bury: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Send waiting jobs to the dead letters.")
        @OptionGroup var targets: Targets
        func run() throws { try targets.act(.bury) }
    }
}
