import ArgumentParser
import FleetConfiguration
import JobQueue
import Operations

/// `receiptfleet dead list|replay|purge`
struct Dead: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Look at, replay or purge dead letters: jobs that will not be retried.",
        discussion: """
            A job becomes a dead letter when it runs out of attempts, when it was delivered too often \
            without an ack (it keeps killing its worker), or when a stream entry is not a job at all. \
            Each keeps its error class and message. Replay re-enqueues matching jobs with their \
            attempts reset; purge deletes them. Filters combine.

            Examples:
              receiptfleet dead list
              receiptfleet dead list --error-class apple.21002
              receiptfleet dead replay --run 2026-11-23
              receiptfleet dead purge --subscription 42 --subscription 43
              receiptfleet dead replay --id 1764039600000-0
            """,
        subcommands: [List.self, Replay.self, Purge.self])

    struct Filter: ParsableArguments {
        @Option(help: "Only this error class, e.g. apple.21002, timeout, stalled, undecodable.")
        var errorClass: String?

        @Option(help: "Only jobs of this scheduler night (every pass of it), or of one pass (2026-11-23/2).")
        var run: String?

        @Option(help: "Only these subscription ids (repeat the option).")
        var subscription: [Int64] = []

        @Option(help: "Only these dead letters, by the id `dead list` prints first (repeat the option).")
        var id: [String] = []

        var value: DeadLetterFilter {
            DeadLetterFilter(
                errorClass: errorClass, runID: run, subscriptionIDs: subscription.isEmpty ? nil : Set(subscription),
                ids: id.isEmpty ? nil : Set(id))
        }
    }

    /// The dead letters a command is about: the fleet's, those the filter matches.
    struct Letters: ParsableArguments {
        @OptionGroup var options: FleetOptions
        @OptionGroup var filter: Filter

        /// Replays or purges them (`change`), recorded in the audit trail as `action`, and says
        /// how many were: `done` names what became of them (Replayed, Purged).
        func change(_ action: String, done: String, _ change: (JobQueue, DeadLetterFilter) throws -> Int) throws {
            let settings = try options.settings()
            let changed = try audited(action, target: filter.value.description, settings: settings, results: { [done.lowercased(): "\($0)"] }) {
                try change(settings.operatorQueue(), filter.value)
            }
            print("\(done) \(changed) dead letters.")
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List dead letters, oldest first.")
        @OptionGroup var letters: Letters
        @Option(help: "At most this many.") var limit = 100

        func run() throws {
            let queue = try letters.options.settings().operatorQueue()
            let found = try queue.deadLetters(matching: letters.filter.value, limit: limit)
            if found.isEmpty { print("No dead letters match.") }
            for letter in found { print(letter.line) }
            let counts = try queue.countDeadLetters(matching: letters.filter.value)
            let kinds = counts.byKind.map { "\($0.count) \($0.errorClass)" }
            print("\(counts.matching) of \(counts.total) dead letters match" + (kinds.isEmpty ? "." : "; all by kind: " + kinds.joined(separator: ", ")))
        }
    }

    struct Replay: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Re-enqueue matching dead letters (attempts reset).")
        @OptionGroup var letters: Letters

        func run() throws { try letters.change("dead.replay", done: "Replayed") { try $0.replay(matching: $1) } }
    }

    struct Purge: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Delete matching dead letters for good.")
        @OptionGroup var letters: Letters

        func run() throws { try letters.change("dead.purge", done: "Purged") { try $0.purge(matching: $1) } }
    }
}
