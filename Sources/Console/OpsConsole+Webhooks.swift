import EventRelay
import Foundation
import Hummingbird
import Redaction

/// Webhook endpoints with their delivery health and latest failures (changes stay with `receiptfleet webhooks`).
extension OpsConsole {
    func webhooks(_ request: Request) async throws -> Response {
        let viewer = try await viewer(request)
        let since = clock.now() - 86_400
        let health = try await lanes.run { desk in try desk.webhooks.health(since: since) }
        return page("webhooks", WebhooksView(viewer: viewer, health: health))
    }
}

struct WebhooksView {
    let chrome: Chrome
    var endpoints: [Endpoint]

    struct Endpoint {
        var id: Int64
        var url: String
        var types: String
        var state: String
        var stateClass: String
        var delivered: Int
        var failed: Int
        var pending: Int
        var lastDelivered: String
        var failures: [Failure]
    }

    struct Failure {
        var at: String
        var status: String
        var error: String
    }

    init(viewer: OpsConsole.Operator, health: [WebhookHealth]) {
        chrome = Chrome("Webhooks", tab: .webhooks, viewer: viewer)
        endpoints = health.map { item in
            let endpoint = item.endpoint
            return Endpoint(
                id: endpoint.id, url: Redact.urlWithoutQuery(endpoint.url),
                types: endpoint.eventTypes.isEmpty ? "every event type" : endpoint.eventTypes.joined(separator: ", "),
                state: endpoint.isEnabled ? "enabled" : "disabled: \(endpoint.disabledReason ?? "-")",
                stateClass: endpoint.isEnabled ? (item.recentFailures.isEmpty ? "open" : "paused") : "halted",
                delivered: item.delivered, failed: item.failed, pending: item.pending,
                lastDelivered: item.lastDeliveredAt.map(Shown.time) ?? "never",
                failures: item.recentFailures.map { failure in
                    Failure(at: Shown.time(failure.attemptedAt), status: failure.status.map(String.init) ?? "no answer",
                            error: failure.error ?? "")
                })
        }
    }
}
