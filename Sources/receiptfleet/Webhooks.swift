import ArgumentParser
import EventRelay
import Fleet
import PostgresClient
import Redaction

/// `receiptfleet webhooks add|list|disable|remove`
struct Webhooks: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Manage the HTTP endpoints that receive subscription events.",
        discussion: "Deliveries are signed (Standard Webhooks) and retried; see docs/webhooks.md.",
        subcommands: [Add.self, List.self, Disable.self, Remove.self])

    struct Add: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Register an endpoint; its signing secret is shown once.",
            discussion: """
                Examples:
                  receiptfleet webhooks add https://billing.internal/hooks/appstore --events renewed,refunded
                  receiptfleet webhooks add https://crm.internal/hooks     (every event type)
                """)
        @OptionGroup var options: FleetOptions
        @Argument(help: "The endpoint's http(s) URL.") var url: String
        @Option(help: "Comma-separated event types (default: all).") var events: String?

        func run() throws {
            let types = events.map { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } } ?? []
            let (endpoint, secret) = try registry(options).add(url: url, eventTypes: types)
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
            let endpoints = try registry(options).list()
            if endpoints.isEmpty { print("No webhook endpoints.") }
            for endpoint in endpoints {
                let types = endpoint.eventTypes.isEmpty ? "all events" : endpoint.eventTypes.joined(separator: ",")
                let state = endpoint.isEnabled ? "enabled" : "disabled (\(endpoint.disabledReason ?? "-"))"
                print("\(endpoint.id)  \(Redact.url(endpoint.url))  \(types)  \(state)")
            }
        }
    }

    struct Disable: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Stop delivering to an endpoint; its pending deliveries fail.",
            discussion: "Examples:\n  receiptfleet webhooks disable 3")
        @OptionGroup var options: FleetOptions
        @Argument(help: "The endpoint id.") var id: Int64

        func run() throws {
            try registry(options).disable(id: id)
            print("Webhook endpoint \(id) is disabled.")
        }
    }

    struct Remove: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Remove an endpoint and its delivery history.",
            discussion: "Examples:\n  receiptfleet webhooks remove 3")
        @OptionGroup var options: FleetOptions
        @Argument(help: "The endpoint id.") var id: Int64

        func run() throws {
            try registry(options).remove(id: id)
            print("Webhook endpoint \(id) is removed.")
        }
    }
}

private func registry(_ options: FleetOptions) throws -> WebhookRegistry {
    WebhookRegistry(database: try PostgresConnection(configuration: options.settings().postgresConfiguration()))
}
