import EventRelay
import FleetConfiguration
import Foundation
import Redaction

/// The webhook endpoints as `receiptfleet webhooks` changes them: each change is recorded in the
/// audit trail (webhooks.VERB) as the command line's, with what it was done to and what came of
/// it, never a secret.
public struct WebhookAdministration {
    private let settings: FleetSettings

    public init(settings: FleetSettings) { self.settings = settings }

    /// Registers an endpoint for `eventTypes` (none: every type); returns it, and its signing secret.
    public func add(url: String, eventTypes: [String]) throws -> (endpoint: WebhookEndpoint, secret: WebhookSecret) {
        try audited(
            "webhooks.add", target: Redact.urlWithoutQuery(url),
            details: ["events": eventTypes.isEmpty ? "all" : eventTypes.joined(separator: ",")], settings: settings,
            results: { ["endpoint": "\($0.endpoint.id)"] }
        ) { try settings.webhookRegistry().add(url: url, eventTypes: eventTypes) }
    }

    public func disable(id: Int64) throws {
        try audited("webhooks.disable", target: "endpoint \(id)", settings: settings) { try settings.webhookRegistry().disable(id: id) }
    }

    public func remove(id: Int64) throws {
        try audited("webhooks.remove", target: "endpoint \(id)", settings: settings) { try settings.webhookRegistry().remove(id: id) }
    }

    /// Queues `endpoint`'s deliveries of the events since `since` again (only `eventTypes`, when
    /// given); `progress` hears the totals after each page.
    public func replay(endpoint: Int64, since: Date, eventTypes: [String], progress: (WebhookReplay) -> Void) throws -> WebhookReplay {
        try audited(
            "webhooks.replay", target: "endpoint \(endpoint)",
            details: ["since": since.formatted(.iso8601), "event_types": eventTypes.isEmpty ? "all" : eventTypes.joined(separator: ",")],
            settings: settings, results: { ["queued": "\($0.queued)", "again": "\($0.again)"] }
        ) { try settings.webhookRegistry().replay(endpoint: endpoint, since: since, eventTypes: eventTypes, afterEachPage: progress) }
    }

    /// Gives endpoint `id` a new signing secret; the previous one signs beside it for `overlapHours`.
    public func rotateSigningSecret(id: Int64, overlapHours: Double) throws -> (secret: WebhookSecret, previousUntil: Date) {
        try audited(
            "webhooks.rotate-secret", target: "endpoint \(id)", details: ["overlap_hours": "\(overlapHours)"], settings: settings,
            results: { ["previous_until": $0.previousUntil.formatted(.iso8601)] }
        ) {
            try settings.webhookRegistry().rotateSigningSecret(
                id: id, overlap: .seconds(overlapHours * 3_600), now: settings.processClock().now())
        }
    }

    /// Encrypts every secret again under the current key (`keyID`); returns how many it encrypted,
    /// and how many already were.
    public func rotateSecrets() throws -> (resealed: Int, alreadyCurrent: Int, keyID: String?) {
        let registry = try settings.webhookRegistry()
        let (resealed, current) = try audited(
            "webhooks.rotate-key", details: ["key": registry.keyID ?? "-"], settings: settings,
            results: { ["resealed": "\($0.0)", "already": "\($0.1)"] }
        ) { try registry.rotateSecrets() }
        return (resealed, current, registry.keyID)
    }
}
