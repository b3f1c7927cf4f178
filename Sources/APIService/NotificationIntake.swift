import AppStore
import Fleet
import FleetConfiguration
import Foundation
import JobQueue
import Ledger
import Logging
import VerificationUseCase

/// Stores an authenticated notification once, and settles it or turns it into one high-priority
/// verification job for its subscription. A V2 notification's signed data, newer than the stored
/// state, is applied at once through the verification use case; on the Server API, when it tells
/// the whole change (`NotifiedChange`), that is all: Apple would answer the same. Otherwise (on
/// verifyReceipt, or when it cannot tell the whole change) the notification says *that* something
/// changed and the worker asks Apple *what*. A CONSUMPTION_REQUEST is recorded too, for the
/// workers' `ConsumptionAnswering` to answer before Apple's deadline.
struct NotificationIntake: Sendable {
    let acceptedEnvironments: Set<AppStoreEnvironment>
    let fleet: FleetSettings
    let metrics: FleetMetrics
    let logger: Logger

    /// What became of a notification: `settled`; `queued`; `stored` when Redis cannot take its job
    /// now (the scheduler enqueues it later); `duplicate`; or why nothing is to be done.
    struct Result: Encodable, Sendable {
        var status: String
        /// Why the job could not be enqueued, for the log; never in the answer.
        var redisError: String? = nil

        enum CodingKeys: String, CodingKey { case status }
    }

    /// On a lane. `recovered`: it came from Apple's history, not from Apple's send.
    func take(_ notification: AppleNotification, connections: Connections, recovered: Bool = false) throws -> Result {
        let (ledger, app) = (connections.ledger, notification.app)
        var record = NotificationRecord(
            dedupeKey: notification.dedupeKey, version: notification.version, notificationType: notification.type,
            meaning: notification.meaning ?? "unknown", subtype: notification.subtype, environment: notification.environment?.rawValue,
            originalTransactionID: notification.originalTransactionID, outcome: .noSubscription)
        (record.signedAt, record.recovered) = (notification.signedAt, recovered)
        if let environment = notification.environment, !acceptedEnvironments.contains(environment) {
            record.outcome = .ignoredEnvironment
        } else if let originalTransactionID = notification.originalTransactionID {
            var subscription = try ledger.subscription(originalTransactionID: originalTransactionID, app: app)
            if subscription == nil, let receipt = notification.latestReceipt {
                // A purchase nobody registered: start watching it from the receipt Apple sent along.
                try ledger.addSubscriptions([NewSubscription(
                    app: app, originalTransactionID: originalTransactionID,
                    environment: notification.environment ?? .production, receipt: receipt)])
                subscription = try ledger.subscription(originalTransactionID: originalTransactionID, app: app)
            }
            record.subscriptionID = subscription?.id
            record.outcome = subscription == nil ? .unknownSubscription : .queued
        }
        let recorded = try ledger.record(record)
        if recorded.isNew, record.outcome != .ignoredEnvironment, let asked = notification.consumptionRequest {
            try ledger.recordConsumptionRequest(ConsumptionRequestNotice(
                dedupeKey: notification.dedupeKey, app: app, environment: notification.environment ?? .production,
                transactionID: asked.transactionID, originalTransactionID: notification.originalTransactionID,
                subscriptionID: record.subscriptionID, productType: asked.productType, familyShared: asked.familyShared,
                reason: asked.reason, signedAt: asked.signedAt), now: connections.clock.now())
        }
        guard let subscriptionID = recorded.jobPendingFor else {
            return Result(status: recorded.isNew ? record.outcome.rawValue : "duplicate")
        }
        if recorded.isNew, let signed = notification.signedData, apply(signed, of: notification, to: subscriptionID, connections: connections) {
            try ledger.markSettled(notificationID: recorded.id)
            return Result(status: NotificationRecord.Outcome.settled.rawValue)
        }
        // Two steps, each safe to repeat: whatever stops this between them (a crash, a failed
        // call), Apple's next copy finds the job pending and finishes, adding the job at most once.
        let occurrence = "notification-\(recorded.id)"
        do {
            try connections.queue.enqueue(subscriptionID: subscriptionID, run: occurrence, reason: .notification, once: occurrence)
        } catch {
            guard case .redis = error else { throw error }
            // Stored is enough to answer Apple 200: the scheduler's next pass enqueues every stored
            // notification whose subscription has not been verified since (as after a Redis loss).
            return Result(status: "stored", redisError: "\(error)")
        }
        try ledger.markJobEnqueued(notificationID: recorded.id)
        return Result(status: "queued")
    }

    /// Applies a V2 notification's signed data; returns whether that settled the change (the
    /// subscription is on the Server API and the data tells the whole change). A failure only
    /// leaves it to the re-check.
    private func apply(
        _ signed: VerifyReceiptResponse, of notification: AppleNotification, to subscriptionID: Int64, connections: Connections
    ) -> Bool {
        let verification = SubscriptionVerification(
            gate: LaneGate(connections: connections, settings: fleet), verifier: connections.apple, store: connections.ledger,
            policy: fleet, metrics: metrics, clock: connections.clock, logger: logger)
        do {
            guard let subscription = try connections.ledger.loadForVerification(ids: [subscriptionID]).first else { return false }
            let settles = (subscription.backend ?? fleet.defaultBackend) == .serverAPI
                && NotifiedChange.settles(signed, known: subscription.state, type: notification.type, subtype: notification.subtype)
            guard try verification.applySigned(signed, to: subscription, runID: "notification") else { return false }
            logger.info(settles ? "a V2 notification's signed data is applied and settles the change"
                                : "a V2 notification's signed data is applied; its re-check confirms it",
                        metadata: ["subscription": "\(subscriptionID)"])
            return settles
        } catch {
            logger.warning("a V2 notification's signed data could not be applied; its re-check will tell",
                           metadata: ["subscription": "\(subscriptionID)", "error": "\(error)"])
            return false
        }
    }
}
