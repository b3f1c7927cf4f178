import AppStore
import AppStoreClients
import Fleet
import FleetConfiguration
import Foundation
import JobQueue
import Lanes
import Ledger

/// What became of asking Apple to extend one subscription.
public enum ExtensionOutcome: Sendable, Equatable {
    /// Apple moved the period's end (to `until`, as it said); the subscription's check is queued.
    case extended(until: Date?, requestIdentifier: String)
    /// Apple refused, saying why.
    case refused(String)
}

/// Renewal-date extensions (`receiptfleet subscriptions extend`, the console): Apple's rules are
/// read from the ledger before Apple is asked (`ExtensionCandidate`), each request is noted
/// before the call under a request identifier a retry reuses (Apple applies one request once),
/// and a granted extension queues its subscriptions' checks, which see the later expiry and
/// announce `renewal_extended`. Blocks its thread: make one where it is used.
public final class RenewalExtender {
    private let connections: Connections
    private let door: AppleDoor
    private let clock: any FleetClock

    /// Throws when the App Store Server API, the only one that extends, has no key here. Each
    /// call waits up to `patience` for its endpoint's budget.
    public init(settings: FleetSettings, metrics: FleetMetrics, clock: any FleetClock, patience: Duration = AppleDoor.operatorPatience) throws {
        guard settings.serverAPI != nil else { throw ExtensionError.noServerAPIKey }
        connections = try Connections(settings: settings, consumer: "extend", enqueueOnly: true, clock: clock)
        door = AppleDoor(gate: connections.gate, settings: settings, metrics: metrics, clock: clock, patience: patience)
        self.clock = clock
    }

    /// The subscriptions `ids` as an extension now sees them.
    public func candidates(ids: [Int64]) throws -> [ExtensionCandidate] {
        try connections.ledger.extensionCandidates(ids: ids, now: clock.now())
    }

    /// The active subscribers of `productID` the ledger knows, as an extension of them all now sees them.
    public func activeSubscribers(ofProduct productID: String, app: String, environment: AppStoreEnvironment) throws -> [ExtensionCandidate] {
        try connections.ledger.activeSubscribers(ofProduct: productID, app: app, environment: environment, now: clock.now())
    }

    /// Asks Apple to extend `candidate` (which the ledger found eligible) by `days`.
    /// Throws when Apple gave no answer; the request stays noted, and doing the same again asks
    /// with the same identifier.
    public func extend(_ candidate: ExtensionCandidate, days: Int, reason: ExtendReason) throws -> ExtensionOutcome {
        let ledger = connections.ledger
        let identifier = try ledger.unansweredExtension(subscriptionID: candidate.id, productID: nil, days: days, reason: reason)
            ?? UUID().uuidString.lowercased()
        try ledger.recordExtensionAsked(subscriptionIDs: [candidate.id], requestIdentifier: identifier, productID: nil, days: days, reason: reason)
        let client = try connections.apple.serverAPIClient(forApp: candidate.app)
        let ask = ExtensionAsk(days: days, reason: reason, requestIdentifier: identifier)
        let extended: ExtendedRenewal
        do {
            extended = try door.call(.extendRenewalDate, forApp: candidate.app) {
                try client.extendRenewalDate(originalTransactionID: candidate.originalTransactionID, ask, in: candidate.environment)
            }
        } catch let error as ServerAPICallError {
            guard let refusal = Self.refusal(error) else { throw ExtensionError.unanswered(error) }
            try ledger.recordExtensionAnswer(requestIdentifier: identifier, expiresAt: nil, refusal: refusal)
            return .refused(refusal)
        }
        guard extended.success else {
            try ledger.recordExtensionAnswer(requestIdentifier: identifier, expiresAt: nil, refusal: "Apple answered success false")
            return .refused("Apple answered that the extension did not succeed")
        }
        let until = extended.effectiveDate?.date
        try ledger.recordExtensionAnswer(requestIdentifier: identifier, expiresAt: until, refusal: nil)
        try queueChecks(of: [candidate.id], after: identifier)
        return .extended(until: until, requestIdentifier: identifier)
    }

    /// Asks Apple to extend every active subscriber of `productID` in `app` and `environment` by
    /// `days`, then reads how far Apple got every `poll` (`progress` hears each reading) until it is
    /// complete. `subscribers` are the ledger's (`activeSubscribers`): the eligible ones are noted,
    /// and their checks queued once Apple is done. Throws when Apple refused or gave no answer
    /// (doing the same again then asks, or reads, with the same identifier).
    public func extendAll(
        productID: String, app: String, environment: AppStoreEnvironment, subscribers: [ExtensionCandidate], days: Int,
        reason: ExtendReason, poll: Duration, progress: (MassExtensionStatus) -> Void
    ) throws -> MassExtensionStatus {
        let ledger = connections.ledger
        let identifier = try ledger.unansweredExtension(subscriptionID: nil, productID: productID, days: days, reason: reason)
            ?? UUID().uuidString.lowercased()
        try ledger.recordExtensionAsked(
            subscriptionIDs: subscribers.filter { $0.ineligible == nil }.map(\.id), requestIdentifier: identifier, productID: productID,
            days: days, reason: reason)
        let client = try connections.apple.serverAPIClient(forApp: app)
        let ask = ExtensionAsk(days: days, reason: reason, requestIdentifier: identifier)
        do {
            try door.call(.extendRenewalDates, forApp: app) { try client.extendRenewalDates(productID: productID, ask, in: environment) }
            while true {
                let status = try door.call(.renewalExtensionStatus, forApp: app) {
                    try client.renewalExtensionStatus(productID: productID, requestIdentifier: identifier, in: environment)
                }
                progress(status)
                if status.complete {
                    let ids = try ledger.recordExtensionAnswer(requestIdentifier: identifier, expiresAt: nil, refusal: nil)
                    try queueChecks(of: ids, after: identifier)
                    return status
                }
                clock.sleep(poll)
            }
        } catch let error as ServerAPICallError {
            guard let refusal = Self.refusal(error) else { throw ExtensionError.unanswered(error) }
            try ledger.recordExtensionAnswer(requestIdentifier: identifier, expiresAt: nil, refusal: refusal)
            throw ExtensionError.refused(refusal)
        }
    }

    /// Each extended subscription's check, as Apple's RENEWAL_EXTENDED notification would queue
    /// it: once per request and subscription, however often this runs.
    private func queueChecks(of ids: [Int64], after requestIdentifier: String) throws {
        for id in ids {
            try connections.queue.enqueue(
                subscriptionID: id, run: "extension", reason: .notification, once: "extension-\(requestIdentifier)-\(id)")
        }
    }

    /// Apple's refusal of an extension, in words, when its error is one of the extension's
    /// (a request Apple will never grant); nil for an answer worth asking again (5xx, 429, no answer).
    private static func refusal(_ error: ServerAPICallError) -> String? {
        error.code.flatMap { code in RenewalExtension.refusals[code].map { "\($0) (Apple's error \(code))" } }
    }
}

/// Why an extension could not be asked for, or got no answer.
public enum ExtensionError: Error, CustomStringConvertible {
    case noServerAPIKey
    case refused(String)
    case unanswered(ServerAPICallError)

    public var description: String {
        switch self {
        case .noServerAPIKey:
            "Renewal dates are extended through the App Store Server API: configure its key (server-api-key-file, "
                + "server-api-key-id, server-api-issuer-id; docs/appstore-server-api.md)."
        case .refused(let why): "Apple refused: \(why)."
        case .unanswered(let error):
            "Apple gave no answer (\(error)). The request is noted: run the same command again, and Apple is asked "
                + "with the same request identifier, which it applies once."
        }
    }
}
