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

            Name the jobs by subscription (at once), or take --all of them that the filters match: \
            without --yes that only says how many; with it, they are changed a few hundred per Redis call, \
            so millions of them never hold Redis for long. Filters combine.

            Examples:
              receiptfleet waiting list --reason nightly --retried
              receiptfleet waiting retry --subscription 42
              receiptfleet waiting delete --subscription 42 --subscription 43
              receiptfleet waiting retry --all --run 2026-11-28 --retried
              receiptfleet waiting retry --all --run 2026-11-28 --retried --yes
              receiptfleet waiting bury --all --reason notification --yes
            """,
        subcommands: [List.self, Retry.self, Delete.self, Bury.self])

    /// Which waiting jobs: by reason, run, and whether they failed before.
    struct Filter: ParsableArguments {
        @Option(help: ArgumentHelp("Only jobs of this reason.", valueName: "reason"),
                completion: .list(Job.Reason.allCases.map { "\($0)" }))
        var reason: String?

        @Option(help: "Only jobs of this run: a night (2026-11-28: all its passes), a pass (2026-11-28/2) or another source's.")
        var run: String?

        @Flag(help: "Only retries: jobs that failed at least once.")
        var retried = false

        @Flag(help: "Only jobs not tried yet: postponed by a pause, or checks waiting for their time.")
        var notTried = false

        func validate() throws {
            if retried && notTried { throw ValidationError("--retried and --not-tried exclude each other: give one, or neither for both.") }
            if let reason, Job.Reason(name: reason) == nil {
                throw ValidationError("--reason must be one of \(Job.Reason.allCases.map { "\($0)" }.joined(separator: ", ")), not '\(reason)'.")
            }
        }

        var value: WaitingJobFilter {
            WaitingJobFilter(reason: reason.flatMap(Job.Reason.init(name:)), runID: run, retried: retried ? true : notTried ? false : nil)
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List waiting jobs, the soonest due first.")
        @OptionGroup var options: FleetOptions
        @OptionGroup var filter: Filter
        @Option(help: "At most this many.") var limit = 100

        func run() throws {
            let lines = try listWaitingJobs(matching: filter.value, limit: min(max(limit, 1), 1_000), settings: options.settings())
            for line in lines { print(line) }
        }
    }
}

extension Waiting {
    /// The waiting jobs a change is about: the subscriptions named, or all that the filter matches.
    struct Targets: ParsableArguments {
        @OptionGroup var options: FleetOptions
        @OptionGroup var filter: Filter
        @Option(help: "The waiting jobs of these subscription ids (repeat the option); changed at once.") var subscription: [Int64] = []
        @Flag(help: "Every waiting job the filters match (without --yes: only say how many).") var all = false
        @Flag(help: "With --all: change them. Without it, nothing changes: the command says how many would.") var yes = false

        func validate() throws {
            guard all != !subscription.isEmpty else { throw ValidationError("Name --subscription ids, or --all.") }
            if yes && !all { throw ValidationError("--yes goes with --all: jobs named by --subscription change at once.") }
        }

        func act(_ action: WaitingJobAction) throws {
            let settings = try options.settings()
            print(try all ? actOnAllWaitingJobs(action, matching: filter.value, confirmed: yes, settings: settings)
                : actOnWaitingJobs(action, subscriptions: subscription, matching: filter.value, settings: settings))
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
