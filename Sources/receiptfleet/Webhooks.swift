import ArgumentParser
import EventRelay
import FleetConfiguration
import FleetFlags
import Operations
import Terminal

/// `receiptfleet webhooks add|list|disable|remove|replay|rotate-secret|rotate-key`
struct Webhooks: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Manage the HTTP endpoints that receive subscription events.",
        discussion: "Deliveries are signed (Standard Webhooks) and retried; see docs/webhooks.md.",
        subcommands: [Add.self, List.self, Disable.self, Remove.self, Replay.self, RotateSecret.self, RotateKey.self])

    struct Add: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Register an endpoint; its signing secret is shown once.",
            discussion: """
                Only https URLs whose host is a public internet address are accepted: loopback, private, \
                link-local and unique-local addresses (and names resolving to them) and plain http are \
                refused unless --allow-private-webhooks is set (development and tests only). The secret is \
                stored encrypted with webhook-secret-key (RECEIPTFLEET_WEBHOOK_SECRET_KEY), which must be set.

                Examples:
                  receiptfleet webhooks add https://billing.example.com/hooks/appstore --events renewed,refunded
                  receiptfleet webhooks add https://crm.example.com/hooks     (every event type)
                  receiptfleet webhooks add http://127.0.0.1:8080/hooks --allow-private-webhooks     (development)
                """)
        @OptionGroup var options: FleetOptions
        @Argument(help: "The endpoint's http(s) URL.") var url: String
        @Option(help: "Comma-separated event types (default: all).") var events: String?

        func run() throws {
            let types = events.map { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } } ?? []
            let (endpoint, secret) = try WebhookAdministration(settings: options.settings()).add(url: url, eventTypes: types)
            print("Added webhook endpoint \(endpoint.id) for \(types.isEmpty ? "every event type" : types.joined(separator: ", ")).")
            print("Its signing secret, shown this once — store it with the receiver:")
            print(secret.text)
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the endpoints (never their secrets).",
            discussion: "Examples:\n  receiptfleet webhooks list")
        @OptionGroup var options: FleetOptions

        func run() throws {
            let endpoints = try options.settings().webhookRegistry().list()
            if endpoints.isEmpty { print("No webhook endpoints.") }
            for endpoint in endpoints { print(endpoint.line) }
        }
    }

    struct Disable: ParsableCommand {
        static let configuration = Endpoint.command("disable", abstract: "Stop delivering to an endpoint; its pending deliveries fail.")
        @OptionGroup var endpoint: Endpoint

        func run() throws { try endpoint.change(done: "disabled") { try $0.disable(id: $1) } }
    }

    struct Remove: ParsableCommand {
        static let configuration = Endpoint.command("remove", abstract: "Remove an endpoint and its delivery history.")
        @OptionGroup var endpoint: Endpoint

        func run() throws { try endpoint.change(done: "removed") { try $0.remove(id: $1) } }
    }

    /// The endpoint a command changes for good (`webhooks VERB ID`).
    struct Endpoint: ParsableArguments {
        @OptionGroup var options: FleetOptions
        @Argument(help: "The endpoint id.") var id: Int64

        /// The command's help: what it does, and how it is run.
        static func command(_ verb: String, abstract: String) -> CommandConfiguration {
            CommandConfiguration(abstract: abstract, discussion: "Examples:\n  receiptfleet webhooks \(verb) 3")
        }

        /// Changes it, and says what it is now (`done`).
        func change(done: String, _ change: (WebhookAdministration, Int64) throws -> Void) throws {
            try change(WebhookAdministration(settings: options.settings()), id)
            print("Webhook endpoint \(id) is \(done).")
        }
    }
}

extension Webhooks {
    struct Replay: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Deliver past events again to one endpoint (say, one added later), without touching the others.",
            discussion: """
                Queues a delivery to ENDPOINT for every published event recorded at or after --since that \
                the endpoint subscribes to (only --event-type ones, when given): new ones for events it \
                never had, and again for those it was sent before (its attempts reset). Deliveries still \
                pending stay as they are. The relay delivers them as usual; receivers de-duplicate by the \
                event id (docs/events.md). The ledger keeps events after the {rf}:events stream has \
                dropped them, so a replay reaches further back than the stream.

                Examples:
                  receiptfleet webhooks replay 3 --since 2026-11-01
                  receiptfleet webhooks replay 3 --since 2026-11-24T02:00:00Z --event-type refunded --event-type refund_reversed
                """)
        @OptionGroup var options: FleetOptions
        @Argument(help: "The endpoint id.") var endpoint: Int64
        @Option(help: "Events recorded at or after this day (2026-11-24) or time (2026-11-24T02:00:00Z).") var since: String
        @Option(help: "Only events of this type (repeat the option); default: every type the endpoint receives.")
        var eventType: [String] = []

        func run() throws {
            let settings = try options.settings()
            let from = try sinceArgument(since, now: settings.processClock().now())
            let progress = ProgressLine()
            let replay = try WebhookAdministration(settings: settings).replay(endpoint: endpoint, since: from, eventTypes: eventType) {
                progress.show("queued \($0.queued) deliveries")
            }
            progress.finish()
            print("Queued \(replay.queued) deliveries to endpoint \(endpoint) (\(replay.again) of events it was sent before); "
                + "the relay delivers them.")
        }
    }

    struct RotateSecret: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rotate-secret",
            abstract: "Give an endpoint a new signing secret; the old one signs beside it for a while.",
            discussion: """
                Prints the new secret once. Until the overlap ends, every delivery carries two signatures \
                in webhook-signature (Standard Webhooks): the new secret's, then the old one's; the receiver \
                accepts either, so it can switch to the new secret whenever it is ready, and nothing fails \
                meanwhile. `webhooks list` shows until when. See docs/webhooks.md, "Rotating an endpoint's secret".

                Examples:
                  receiptfleet webhooks rotate-secret 3
                  receiptfleet webhooks rotate-secret 3 --overlap-hours 72
                """)
        @OptionGroup var options: FleetOptions
        @Argument(help: "The endpoint's id (see `webhooks list`).") var id: Int64
        @Option(help: "How long the old secret goes on signing beside the new one, in hours.") var overlapHours = 24.0

        func validate() throws {
            guard overlapHours >= 0, overlapHours <= 24 * 90 else { throw ValidationError("--overlap-hours must be from 0 to 2160.") }
        }

        func run() throws {
            let (secret, until) = try WebhookAdministration(settings: options.settings()).rotateSigningSecret(id: id, overlapHours: overlapHours)
            print("Endpoint \(id) has a new signing secret; the previous one signs beside it until \(until.formatted(.iso8601)).")
            print("The new secret, shown this once — give it to the receiver:")
            print(secret.text)
        }
    }

    struct RotateKey: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rotate-key",
            abstract: "Encrypt every webhook secret again under the current webhook-secret-key.",
            discussion: """
                Set the new key as webhook-secret-key and the old one in webhook-secret-previous-keys, on \
                every process (relays then sign with secrets under either key), run this once, then drop \
                the previous key. It also encrypts secrets stored in plaintext before encryption existed \
                (migration 10). One transaction: a secret under a key that is not configured changes nothing. \
                See docs/webhooks.md, "Rotating the key".

                Examples:
                  RECEIPTFLEET_WEBHOOK_SECRET_KEY=<new> RECEIPTFLEET_WEBHOOK_SECRET_PREVIOUS_KEYS=<old> receiptfleet webhooks rotate-key
                """)
        @OptionGroup var options: FleetOptions

        func run() throws {
            let (resealed, current, keyID) = try WebhookAdministration(settings: options.settings()).rotateSecrets()
            print("Encrypted \(resealed) webhook secret(s) again under key \(keyID ?? "-"); "
                + "\(current) already were. Previous keys are no longer needed for them.")
        }
    }
}
