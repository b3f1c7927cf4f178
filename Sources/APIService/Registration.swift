import AppStore
import AppStoreClients
import Fleet
import FleetConfiguration
import Foundation
import JobQueue
import Lanes
import Ledger
import Logging
import VerificationUseCase

/// `POST /v1/receipts`: what the app's back end sends when a customer buys (or restores).
struct RegistrationRequest: Decodable, Sendable {
    /// The base64 receipt from the device.
    var receipt: String
    /// The app's own id for the customer.
    var accountID: String?
    /// The purchase's original_transaction_id, if the app knows it: lets the registration be
    /// queued (202) when Apple cannot be asked right now, instead of failing with 503.
    var originalTransactionID: String?
    /// The deployment's name for the receipt's app (`apps-file`). Optional: Apple's answer names the
    /// bundle id, which decides; naming it picks the app's shared secret at once and lets a
    /// registration be queued.
    var app: String?

    enum CodingKeys: String, CodingKey {
        case receipt, app
        case accountID = "account_id"
        case originalTransactionID = "original_transaction_id"
    }

    /// The longest receipt taken, in base64 characters (192 KiB decoded). A real receipt is Apple's
    /// certificate chain and signature (about 4.5 KB) and a few hundred bytes a purchase: the
    /// recorded ones in the project's fixtures are 6,328 to 7,928 characters, and this bound holds
    /// some 700 purchases. A queued registration keeps its receipt until Apple judges it, so the
    /// bound is also what one claim may store (docs/api.md).
    static let maxReceiptCharacters = 256 * 1024

    /// The request's own mistakes, said plainly.
    func validated() throws(APIError) -> (ReceiptData, accountID: String?, originalTransactionID: String?) {
        let receipt = receipt.filter { !$0.isWhitespace }
        guard receipt.utf8.count <= Self.maxReceiptCharacters else {
            throw .badRequest("receipt_too_large", "'receipt' is \(receipt.utf8.count) characters; a receipt's base64 "
                              + "text is at most \(Self.maxReceiptCharacters) (an app's receipt is usually under 10,000)")
        }
        guard !receipt.isEmpty, receipt.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "+/=".contains($0)) }) else {
            throw .badRequest("invalid_receipt", "'receipt' must be the receipt's base64 text, as the device gives it")
        }
        if let accountID { _ = try APIError.checkedID(accountID, "account_id") }
        if let id = originalTransactionID,
           id.isEmpty || id.count > 64 || !id.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "._-".contains($0)) }) {
            throw .badRequest("invalid_original_transaction_id", "'original_transaction_id' must be 1 to 64 letters or digits")
        }
        return (ReceiptData(base64: receipt), accountID, originalTransactionID)
    }
}

/// The answer: every subscription and one-time purchase on the receipt, with how it stands and
/// whom it belongs to.
struct RegistrationResponse: Encodable, Sendable {
    struct Item: Encodable, Sendable {
        var subscription: SubscriptionView
        /// `linked`: to the account the request named (now or before); `other_account`: an
        /// earlier registration linked it to `subscription.account_id`, and it stays there (the
        /// restore case: the receipt is this Apple ID's, the account is someone else's);
        /// `none`: the request named no account.
        var account: String
        /// True when the ledger had not seen the subscription before.
        var created: Bool
    }

    /// A one-time purchase, linked like a subscription (`account` and `created` mean the same).
    struct PurchaseItem: Encodable, Sendable {
        var purchase: PurchaseView
        var account: String
        var created: Bool
    }

    /// `verified` (Apple answered now) or `pending` (queued; Apple could not be asked now).
    var verification: String
    var subscriptions: [Item]
    /// Empty while `pending`: only Apple's answer shows them.
    var purchases: [PurchaseItem]

    /// How a registration naming `wanted` left the link of something linked to `linked`.
    static func account(wanted: String?, linked: String?) -> String {
        switch (wanted, linked) {
        case (nil, _): "none"
        case (let wanted?, let linked?) where wanted != linked: "other_account"
        default: "linked"
        }
    }
}

/// Registers receipts: verifies them with Apple at once, under the fleet's halt, pause and rate
/// limit, through the workers' verification use case (`SubscriptionVerification`: the same status
/// policy, analysis and write, so the same receipt twice updates, never duplicates, and events are
/// only those verifyReceipt shows).
struct Registrar: Sendable {
    let fleet: FleetSettings
    let settings: APISettings
    let lanes: APILanes
    /// Apple's answers, counted as the workers count theirs.
    let metrics: FleetMetrics
    let logger: Logger
    let clock: any FleetClock
    let redisRest: ServerRest

    func register(_ request: RegistrationRequest) async throws -> (RegistrationResponse, pending: Bool) {
        let (receipt, accountID, originalTransactionID) = try request.validated()
        let named = try app(named: request.app)
        return try await redisRest.guarding {
            try await register(receipt, accountID: accountID, originalTransactionID: originalTransactionID, app: named)
        }
    }

    private func register(
        _ receipt: ReceiptData, accountID: String?, originalTransactionID: String?, app named: String?
    ) async throws -> (RegistrationResponse, pending: Bool) {
        do {
            let probing = try await admission(to: .verifyReceipt, forApp: named)
            let (fleet, app, metrics, logger) = (fleet, named, metrics, logger)
            let response = try await lanes.run { connections in
                try Self.verifyAndStore(.receipt(receipt), startingIn: .production, accountID: accountID, probing: probing,
                                        fleet: fleet, app: app, metrics: metrics, connections: connections, logger: logger)
            }
            return (response, false)
        } catch let error as APIError where error.status == .serviceUnavailable {
            // Apple cannot be asked now: queue the check if the app told us which subscription it is (and whose).
            guard let originalTransactionID, let app = named else { throw error }
            let logger = logger
            let response = try await lanes.run { connections in
                try Self.queue(receipt, originalTransactionID: originalTransactionID, accountID: accountID, app: app,
                               connections: connections)
            }
            guard let response else {
                throw APIError(.serviceUnavailable, "too_many_pending_claims",
                               "Apple cannot be asked now, and \(Ledger.pendingClaimsPerSubscription) other registrations of "
                               + "this subscription already wait for Apple's judgement; register again when Apple can be asked",
                               headers: error.headers)
            }
            logger.info("registration queued: Apple cannot be asked now", metadata: ["reason": "\(error.code)"])
            return (response, true)
        }
    }

    /// The app the request named, checked; without a name, the deployment's one app if it has
    /// only one, else nil (Apple's answer will tell).
    func app(named name: String?) throws(APIError) -> String? {
        do {
            return try fleet.apps.resolve(name)
        } catch {
            throw .badRequest("unknown_app", error.description)
        }
    }

    /// Waits for the fleet's rate limiter of `endpoint` (up to `appleWait`): books a time slot
    /// within it through the lane's gate and sleeps until then, off the lane; refuses while the
    /// fleet (or `app`) is paused or halted, or the endpoint's budget is spent. Returns whether this
    /// call is the fleet's probe after a pause.
    func admission(to endpoint: AppleEndpoint, forApp app: String?) async throws -> Bool {
        let (horizon, fleet, redisRest) = (settings.appleWait, fleet, redisRest)
        let admission = try await lanes.run {
            try redisRest.refuseWhileResting()
            return try LaneGate(connections: $0, settings: fleet).book(endpoint, forApp: app, within: horizon)
        }
        if case .granted(let slots) = admission { try await Task.sleep(for: slots[0]) }
        guard let refusal = admission.refusal else { return admission == .probe }
        switch refusal {
        case .paused(let wait):
            throw APIError.unavailable("apple_unavailable", "Apple is unavailable and the fleet is paused; try again later",
                                       retryAfter: wait)
        case .halted:
            throw APIError.unavailable("fleet_halted", "verification is halted by the operator or a configuration error; "
                                       + "try again later", retryAfter: .seconds(60))
        case .appHalted:
            throw APIError.unavailable("app_halted", "verification of this app's receipts is halted by a configuration error "
                                       + "(its shared secret); try again later", retryAfter: .seconds(60))
        case .rateLimited(let wait), .throttled(let wait):
            throw APIError.unavailable("apple_rate_limited", "the fleet is at its rate limit for Apple; try again shortly",
                                       retryAfter: wait)
        }
    }

    /// On a lane: asks Apple about a receipt or a transaction of `app` (nil: the answer's bundle id
    /// tells) through the fleet's verification use case, and stores every subscription Apple's
    /// answer shows (the customer's, on a receipt or in the Server API's statuses).
    static func verifyAndStore(
        _ subject: VerificationSubject, startingIn environment: AppStoreEnvironment, accountID: String?, probing: Bool,
        fleet: FleetSettings, app: String?, metrics: FleetMetrics, connections: Connections, logger: Logger
    ) throws -> RegistrationResponse {
        let verification = SubscriptionVerification(
            gate: LaneGate(connections: connections, settings: fleet), verifier: connections.apple,
            store: connections.ledger, policy: fleet, metrics: metrics, clock: connections.clock, logger: logger)
        // A person is waiting: Apple's answer now is final for this request (21002 included).
        let answer = try verification.ask(
            about: subject, ofApp: app, startingIn: environment, attempt: StatusPolicy().malformedReceiptAttempts,
            probing: probing, subscriptionID: nil)
        let outcome = answer.verification.outcome
        let what = subject.backend == .serverAPI ? "transaction" : "receipt"
        switch answer.verdict {
        case .verified(let response):
            return try store(response, answer: answer, through: verification, subject: subject, accountID: accountID,
                             fleet: fleet, app: owner(of: response, named: app, in: fleet.apps), ledger: connections.ledger)
        case .unavailable(let pause):
            // Zero when the fleet does not pause for one failure: the client may try again soon.
            throw APIError.unavailable("apple_unavailable", "Apple is unavailable (\(outcome.summary)); try again later",
                                       retryAfter: max(pause, .seconds(1)))
        case .halted:
            // Not one client's doing: every call has failed so for long enough (https to a plain port),
            // or several subscriptions' receipts answer a configuration error.
            throw APIError.unavailable("fleet_halted", "verification is halted by a configuration error; try again later",
                                       retryAfter: .seconds(60))
        case .retry:
            throw APIError.unavailable("apple_retry", "Apple asked to try again later (\(outcome.summary))",
                                       retryAfter: .seconds(5))
        case .rejected(let reason):
            throw APIError(.unprocessableContent, "\(what)_rejected", "Apple rejected the \(what): \(reason)")
        case .misconfigured(let reason):
            // Not a halt: a client's receipt of another app also answers 21004. The workers halt
            // the fleet if the configuration is really wrong.
            throw APIError.unavailable("verification_misconfigured", "Apple reports a configuration error (\(reason))",
                                       retryAfter: .seconds(60))
        }
    }

    /// The app Apple's answer belongs to, by its bundle id: the one the request named, or refused
    /// when the bundle id is another app's or none of the deployment's.
    static func owner(of response: VerifyReceiptResponse, named: String?, in apps: AppCatalog) throws(APIError) -> String {
        let bundleID = response.receipt?.bundleID
        guard let owner = apps.app(bundleID: bundleID) else {
            throw APIError(.unprocessableContent, "unknown_app", "the \(bundleID.map { "receipt's bundle id \($0)" } ?? "receipt") "
                           + "belongs to none of this deployment's apps; add it to the apps file (see docs/operations.md)")
        }
        if let named, named != owner.name {
            throw APIError(.unprocessableContent, "wrong_app", "the receipt is the app \(owner.name)'s (bundle id "
                           + "\(bundleID ?? "none")), not \(named)'s")
        }
        return owner.name
    }

    /// Adds the subscriptions and one-time purchases of Apple's answer to the ledger, records the
    /// answer for them through the use case, and links them to the account. Asked by transaction,
    /// they have no receipt and stay on the Server API.
    private static func store(
        _ response: VerifyReceiptResponse, answer: Answer, through verification: SubscriptionVerification,
        subject: VerificationSubject, accountID: String?, fleet: FleetSettings, app: String, ledger: Ledger
    ) throws -> RegistrationResponse {
        let now = verification.clock.now()
        let ids = OneTimePurchases.subscriptionIDs(in: response, nonRenewingProductIDs: fleet.nonRenewingProductIDs)
        let found = OneTimePurchases(response, nonRenewingProductIDs: fleet.nonRenewingProductIDs)
        guard !ids.isEmpty || !found.purchases.isEmpty else {
            throw APIError(.unprocessableContent, "no_subscription", "Apple's answer holds no subscription and no in-app purchase")
        }
        let existing = Set(try ids.filter { try ledger.subscription(originalTransactionID: $0, app: app) != nil })
        let environment = response.effectiveEnvironment ?? answer.verification.environment
        let receipt = if case .receipt(let sent) = subject { response.latestReceipt ?? sent } else { response.latestReceipt }
        try ledger.addSubscriptions(ids.map {
            NewSubscription(app: app, originalTransactionID: $0, environment: environment, receipt: receipt,
                            backend: receipt == nil ? .serverAPI : nil)
        })
        let records = try ids.compactMap { try ledger.subscription(originalTransactionID: $0, app: app) }
        let purchases = try verification.record(
            response, answer: answer, for: try ledger.loadForVerification(ids: records.map(\.id)),
            purchases: PurchaseWrite(
                app: app, found: found,
                announcingPurchasesAfter: OneTimePurchases.announcingAfter(
                    response, stored: nil, registrationWindow: fleet.initialPurchaseWindow, now: now),
                accountID: accountID),
            runID: "registration", announcingPurchasesWithin: fleet.initialPurchaseWindow)
        var registration = try registered(
            ids: records.map(\.id), accountID: accountID, existing: existing, verification: "verified", app: app,
            ledger: ledger, now: now)
        registration.purchases = purchases.records.map { record in
            RegistrationResponse.PurchaseItem(
                purchase: PurchaseView(record), account: RegistrationResponse.account(wanted: accountID, linked: record.accountID),
                created: purchases.created.contains(record.purchase.transactionID))
        }
        return registration
    }

    /// On a lane: records the registration as a claim on the subscription the app named, with its
    /// own receipt, and enqueues a high-priority registration job, which the workers run ahead of
    /// the nightly backlog: Apple judges each queued receipt alone (`SubscriptionVerification.judge`).
    /// Nil when the subscription holds as many unjudged claims as it may.
    private static func queue(
        _ receipt: ReceiptData, originalTransactionID: String, accountID: String?, app: String, connections: Connections
    ) throws -> RegistrationResponse? {
        let ledger = connections.ledger
        let existing = try ledger.subscription(originalTransactionID: originalTransactionID, app: app)
        if existing == nil {
            // Without the receipt: anyone can name any original_transaction_id, with anything.
            try ledger.addSubscriptions([NewSubscription(app: app, originalTransactionID: originalTransactionID, receipt: nil)])
        }
        guard let record = try ledger.subscription(originalTransactionID: originalTransactionID, app: app) else {
            throw APIError(.conflict, "subscription_deleted", "the subscription was deleted while registering; try again")
        }
        // A claim, not a link: only Apple's answer for this very receipt links the account and
        // grants the entitlement, and only such an answer stores the receipt for the subscription.
        guard try ledger.claimSubscription(record.id, accountID: accountID, receipt: receipt) == .claimed else { return nil }
        try connections.queue.enqueue(subscriptionID: record.id, run: "registration", reason: .registration)
        let item = RegistrationResponse.Item(
            subscription: .pending(record, now: connections.clock.now()), account: accountID == nil ? "none" : "pending", created: existing == nil)
        return RegistrationResponse(verification: "pending", subscriptions: [item], purchases: [])
    }

    /// Links the subscriptions to the account (when the request named one) and describes them.
    private static func registered(
        ids: [Int64], accountID: String?, existing: Set<String>, verification: String, app: String, ledger: Ledger, now: Date
    ) throws -> RegistrationResponse {
        let accounts = try accountID.map { try ledger.linkAccount($0, to: ids, app: app) } ?? [:]
        let items = try ids.compactMap { id -> RegistrationResponse.Item? in
            guard let record = try ledger.subscription(id: id) else { return nil }
            return RegistrationResponse.Item(
                subscription: SubscriptionView(record, now: now),
                account: RegistrationResponse.account(wanted: accountID, linked: accounts[id]),
                created: !existing.contains(record.originalTransactionID))
        }
        return RegistrationResponse(verification: verification, subscriptions: items, purchases: [])
    }
}

