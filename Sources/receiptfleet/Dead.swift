import ArgumentParser
import Fleet
import FleetConfiguration
import Foundation
import JobQueue
import RedisClient

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

        @Option(help: "Only jobs of this scheduler run.")
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

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List dead letters, oldest first.")
        @OptionGroup var options: FleetOptions
        @OptionGroup var filter: Filter
        @Option(help: "At most this many.") var limit = 100

        func run() throws {
            let queue = try queue(try options.settings())
            let letters = try queue.deadLetters(matching: filter.value, limit: limit)
            if letters.isEmpty { print("No dead letters match.") }
            for letter in letters {
                let buried = Date(timeIntervalSince1970: Double(letter.buriedAt) / 1000)
                let subject = letter.job.map { "subscription \($0.subscriptionID), run \($0.runID)" } ?? "not a job: \(letter.jobText)"
                print("\(letter.id)  \(subject)  \(letter.failure.errorClass): \(letter.failure.message)  "
                    + "(\(letter.attempts) attempts, buried \(buried))")
            }
            let counts = try queue.countDeadLetters(matching: filter.value)
            let kinds = counts.byErrorClass.sorted { ($1.value, $0.key) < ($0.value, $1.key) }.map { "\($0.value) \($0.key)" }
            print("\(counts.matching) of \(counts.total) dead letters match" + (kinds.isEmpty ? "." : "; all by kind: " + kinds.joined(separator: ", ")))
        }
    }

    struct Replay: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Re-enqueue matching dead letters (attempts reset).")
        @OptionGroup var options: FleetOptions
        @OptionGroup var filter: Filter

        func run() throws {
            let settings = try options.settings()
            let replayed = try audited("dead.replay", target: filter.value.description, settings: settings, results: { ["replayed": "\($0)"] }) {
                try queue(settings).replay(matching: filter.value)
            }
            print("Replayed \(replayed) dead letters.")
        }
    }

    struct Purge: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Delete matching dead letters for good.")
        @OptionGroup var options: FleetOptions
        @OptionGroup var filter: Filter

        func run() throws {
            let settings = try options.settings()
            let purged = try audited("dead.purge", target: filter.value.description, settings: settings, results: { ["purged": "\($0)"] }) {
                try queue(settings).purge(matching: filter.value)
            }
            print("Purged \(purged) dead letters.")
        }
    }
}

private func queue(_ settings: FleetSettings) throws -> JobQueue {
    try JobQueue(
        connection: RedisConnection(settings.redisConfiguration()),
        keys: QueueKeys(prefix: settings.keyPrefix), consumer: JobQueue.consumerName(thread: -4), clock: settings.scriptClock)
}
