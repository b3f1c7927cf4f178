import Crypto
import Foundation
import Synchronization

/// What the simulator needs to serve the App Store Server API: whose bearer tokens to accept (the
/// In-App Purchase key `simulate-appstore seed --server-api-key` wrote), and which seeded fleet
/// its transaction ids belong to (the Server API is asked by transaction id, not by receipt), for
/// each app: a token names its app (`bid`), and Apple answers about that app's purchases only.
public struct ServerAPISimulation: Sendable {
    public let publicKey: P256.Signing.PublicKey
    /// The seed of each app's fleet, by its index in `Catalog.bundleIDs`: the first app's first.
    public let seeds: [UInt64]
    /// The time the fleet's lifecycles are centred on (the seed command's `--at`).
    public let anchorMs: Int64
    /// How many receipts each app's fleet holds, by the app's index as `seeds` (the seed command's
    /// `--count`): what their lifecycles send makes the notification history. An app not listed has none.
    public let subscriptions: [Int]
    /// The renewal-date extensions granted so far: every answer reads the expiries they moved.
    public let extensions = GrantedExtensions()
    /// The answers to consumption requests Apple took.
    public let consumption = ReceivedConsumption()

    /// The first simulated app's bundle id: a token for it asks about the fleet of `seeds[0]`.
    public static var bundleID: String { Catalog.bundleID }

    /// `seeds`: the first app's fleet, then the other apps' (none: only the first app is served).
    public init(publicKey: P256.Signing.PublicKey, seeds: [UInt64], anchorMs: Int64, subscriptions: [Int] = []) {
        precondition(!seeds.isEmpty && seeds.count <= Catalog.bundleIDs.count, "one seed per simulated app")
        self.publicKey = publicKey
        self.seeds = seeds
        self.anchorMs = anchorMs / 1000 * 1000
        self.subscriptions = subscriptions
    }
}

/// Get All Subscription Statuses (`GET /inApps/v1/subscriptions/{transactionId}`) as Apple answers
/// it: the bearer token checked, then the latest transaction of each of the customer's
/// subscriptions with its renewal info, both signed, or Apple's error bodies.
enum ServerAPIEndpoint {
    struct Answer {
        var httpStatus: Int
        var body: [UInt8]
        /// Seconds, for a 429.
        var retryAfter: String?
    }

    static func statuses(
        authorization: String?, transactionID: String, endpoint: SimulatedEnvironment, now: Int64,
        setup: ServerAPISimulation, signing: SimulatorSigningChain
    ) -> Answer {
        switch lookUp(authorization: authorization, transactionID: transactionID, endpoint: endpoint, now: now, setup: setup) {
        case .failure(let failure): failure.answer
        case .success(let (app, snapshots)):
            Answer(httpStatus: 200, body: render(snapshots, of: app, environment: endpoint, now: now, signing: signing))
        }
    }

    /// How many transactions one page of the history holds, as Apple's.
    static let historyPageSize = 20

    /// Get Transaction History (`GET /inApps/v2/history/{transactionId}?revision=…&revoked=…`):
    /// every transaction of the customer's subscriptions, oldest first, a page at a time; `revision`
    /// (here, where the page starts) comes from the page before; `revoked` true keeps only the
    /// refunded and revoked ones, false only the others.
    static func history(
        authorization: String?, transactionID: String, revision: String?, revoked: Bool?, endpoint: SimulatedEnvironment, now: Int64,
        setup: ServerAPISimulation, signing: SimulatorSigningChain
    ) -> Answer {
        let (app, snapshots): (String, [ChainSnapshot])
        switch lookUp(authorization: authorization, transactionID: transactionID, endpoint: endpoint, now: now, setup: setup) {
        case .failure(let failure): return failure.answer
        case .success(let found): (app, snapshots) = found
        }
        guard let start = revision.map({ Int($0) }) ?? 0, start >= 0 else { return error(400, 4_000_005, "Invalid revision.") }
        let all = snapshots.flatMap { snapshot in snapshot.transactions.enumerated().map { ($1, $0) } }
            .filter { revoked == nil || ($0.0.cancellationMs != nil) == revoked }
            .sorted { ($0.0.purchaseMs, $0.0.transactionID) < ($1.0.purchaseMs, $1.0.transactionID) }
        let page = all.dropFirst(start).prefix(historyPageSize)
        let next = start + page.count
        var json = JSONWriter(capacity: 2048 * page.count + 256)
        json.beginObject()
        json.string("revision", String(next))
        json.string("bundleId", app)
        json.number("appAppleId", Catalog.appItemID)
        json.string("environment", endpoint.rawValue)
        json.bool("hasMore", next < all.count)
        json.beginArray("signedTransactions")
        for (transaction, renewals) in page {
            json.element(signing.sign(transactionPayload(transaction, of: app, renewalCount: renewals, environment: endpoint, now: now)))
        }
        json.endArray()
        json.endObject()
        return Answer(httpStatus: 200, body: json.finish())
    }

    /// The app the token is for (its bundle id) and the snapshots of the subscriptions of the
    /// customer who owns `transactionID` in that app, or Apple's error answer: 401 for a token
    /// Apple would refuse, 404 (4040010) for a transaction this environment (or app) does not know.
    private static func lookUp(
        authorization: String?, transactionID: String, endpoint: SimulatedEnvironment, now: Int64, setup: ServerAPISimulation
    ) -> Result<(String, [ChainSnapshot]), AnswerError> {
        guard let app = app(of: authorization, in: setup) else { return .failure(AnswerError(unauthorized)) }
        guard let id = UInt64(transactionID) else { return .failure(AnswerError(error(400, 4_000_006, "Invalid transaction id."))) }
        guard let position = IdentifierScheme.position(ofTransactionID: id, seed: setup.seeds[app]) else {
            return .failure(AnswerError(notFound))
        }
        let kind = LifecycleKind.at(index: position.index)
        let receipt = SimulatedReceipt(token: ReceiptToken(
            seed: setup.seeds[app], index: position.index, environment: kind.environment, anchorMs: setup.anchorMs, app: app))
            .extended(by: setup.extensions)
        // Only the environment the purchase was made in knows it; a receipt Apple cannot vouch for
        // (malformed, a deleted account) has no transaction anywhere.
        guard receipt.token.environment == endpoint, receipt.fixedFailureStatus == nil,
              receipt.scripts.contains(where: { $0.chain == position.chain })
        else { return .failure(AnswerError(notFound)) }
        let snapshots = receipt.snapshots(at: now)
        return snapshots.isEmpty ? .failure(AnswerError(notFound)) : .success((receipt.token.bundleID, snapshots))
    }

    /// The simulated app (its index in `setup.seeds`) a request's bearer token is for, if Apple would take it.
    static func app(of authorization: String?, in setup: ServerAPISimulation) -> Int? {
        guard let app = tokenApp(authorization, key: setup.publicKey, at: Date()), app < setup.seeds.count else { return nil }
        return app
    }

    /// A token Apple would not take: 401, no body.
    static let unauthorized = Answer(httpStatus: 401, body: [])

    /// An error answer, as a `Result`'s failure.
    struct AnswerError: Error {
        let answer: Answer
        init(_ answer: Answer) { self.answer = answer }
    }

    static let notFound = error(404, 4_040_010, "Transaction id not found.")

    /// Past the rate limit: a second's wait, as Apple says it.
    static let rateLimited = Answer(
        httpStatus: 429, body: error(429, 4_290_000, "Rate limit exceeded.").body, retryAfter: "1")

    static func error(_ httpStatus: Int, _ code: Int64, _ message: String) -> Answer {
        var json = JSONWriter(capacity: 80)
        json.beginObject()
        json.number("errorCode", code)
        json.string("errorMessage", message)
        json.endObject()
        return Answer(httpStatus: httpStatus, body: json.finish())
    }

    /// A `StatusResponse`: the subscriptions grouped by subscription group, each with its latest
    /// transaction (as verifyReceipt's `latest_receipt_info` with exclude-old-transactions).
    private static func render(_ snapshots: [ChainSnapshot], of app: String, environment: SimulatedEnvironment, now: Int64,
                               signing: SimulatorSigningChain) -> [UInt8] {
        var json = JSONWriter(capacity: 4096 * snapshots.count)
        json.beginObject()
        json.string("environment", environment.rawValue)
        json.string("bundleId", app)
        json.number("appAppleId", Catalog.appItemID)
        json.beginArray("data")
        for group in Array(Set(snapshots.map { $0.transactions.last!.plan.group })).sorted() {
            json.beginObject()
            json.string("subscriptionGroupIdentifier", group)
            json.beginArray("lastTransactions")
            for snapshot in snapshots where snapshot.transactions.last!.plan.group == group {
                let latest = snapshot.transactions.last!
                json.beginObject()
                json.number("status", status(snapshot.status))
                json.string("originalTransactionId", String(latest.originalTransactionID))
                json.string("signedTransactionInfo", signing.sign(
                    transactionPayload(latest, of: app, renewalCount: snapshot.transactions.count - 1, environment: environment, now: now)))
                json.string("signedRenewalInfo", signing.sign(renewalPayload(snapshot.renewal, environment: environment, now: now)))
                json.endObject()
            }
            json.endArray()
            json.endObject()
        }
        json.endArray()
        json.endObject()
        return json.finish()
    }

    /// Apple's status codes: 1 active, 2 expired, 3 billing retry, 4 grace period, 5 revoked.
    private static func status(_ status: SubscriptionStatus) -> Int64 {
        switch status {
        case .active: 1
        case .expired, .invalid: 2
        case .inBillingRetry: 3
        case .inGrace: 4
        case .refunded: 5
        }
    }

    /// `JWSTransactionDecodedPayload`: camelCase, ids as strings, dates as milliseconds.
    static func transactionPayload(
        _ transaction: SimulatedTransaction, of app: String, renewalCount: Int, environment: SimulatedEnvironment, now: Int64
    ) -> [UInt8] {
        var json = JSONWriter(capacity: 768)
        json.beginObject()
        json.string("transactionId", String(transaction.transactionID))
        json.string("originalTransactionId", String(transaction.originalTransactionID))
        json.string("webOrderLineItemId", String(transaction.webOrderLineItemID))
        json.string("bundleId", app)
        json.string("productId", transaction.plan.productID)
        json.string("subscriptionGroupIdentifier", transaction.plan.group)
        json.number("purchaseDate", transaction.purchaseMs)
        json.number("originalPurchaseDate", transaction.originalPurchaseMs)
        json.number("expiresDate", transaction.expiresMs)
        json.number("quantity", 1)
        json.string("type", "Auto-Renewable Subscription")
        json.string("inAppOwnershipType", transaction.ownership.rawValue)
        json.number("signedDate", now)
        json.string("environment", environment.rawValue)
        json.string("transactionReason", renewalCount == 0 ? "PURCHASE" : "RENEWAL")
        if transaction.isTrial {
            json.number("offerType", 1)
            json.string("offerDiscountType", "FREE_TRIAL")
        }
        if let offer = transaction.offerCode { writeOfferCode(offer, to: &json) }
        if let revoked = transaction.cancellationMs { json.number("revocationDate", revoked) }
        if let reason = transaction.cancellationReason { json.number("revocationReason", Int64(reason)) }
        if transaction.isUpgraded { json.bool("isUpgraded", true) }
        json.endObject()
        return json.finish()
    }

    /// An offer code as both payloads name it: `offerType` 3, the code's reference name as `offerIdentifier`.
    private static func writeOfferCode(_ offer: String, to json: inout JSONWriter) {
        json.number("offerType", 3)
        json.string("offerIdentifier", offer)
    }

    /// `JWSRenewalInfoDecodedPayload`.
    static func renewalPayload(_ renewal: PendingRenewal, environment: SimulatedEnvironment, now: Int64) -> [UInt8] {
        var json = JSONWriter(capacity: 384)
        json.beginObject()
        json.string("originalTransactionId", String(renewal.originalTransactionID))
        json.string("productId", renewal.productID)
        json.string("autoRenewProductId", renewal.autoRenewProductID)
        json.number("autoRenewStatus", renewal.autoRenewOn ? 1 : 0)
        if let intent = renewal.expirationIntent { json.number("expirationIntent", Int64(intent)) }
        if let retrying = renewal.isInBillingRetry { json.bool("isInBillingRetryPeriod", retrying) }
        if let grace = renewal.graceExpiresMs { json.number("gracePeriodExpiresDate", grace) }
        if let consent = renewal.priceConsentStatus { json.number("priceIncreaseStatus", Int64(consent)) }
        if let offer = renewal.offerCode { writeOfferCode(offer, to: &json) }
        json.number("signedDate", now)
        json.string("environment", environment.rawValue)
        json.endObject()
        return json.finish()
    }

    /// The app (its index in `Catalog.bundleIDs`) of the token `authorization` carries, if Apple
    /// would take it: ES256 by the key, for one of the account's apps, for the Server API's
    /// audience, issued at most an hour before it expires, not expired.
    static func tokenApp(_ authorization: String?, key: P256.Signing.PublicKey, at now: Date) -> Int? {
        guard let authorization, authorization.hasPrefix("Bearer ") else { return nil }
        let seconds = Int(now.timeIntervalSince1970)
        // A client sends one token for many requests (Apple's last up to an hour): its signature and
        // claims are read once, and only its times are checked again.
        let token = readTokens.withLock { $0[authorization] } ?? readToken(authorization, key: key)
        guard let token else { return nil }
        readTokens.withLock { tokens in
            if tokens.count >= 1_024 { tokens.removeAll() }
            tokens[authorization] = token
        }
        return token.expires > seconds && token.expires - token.issued <= 3_600 && token.issued <= seconds + 60 ? token.app : nil
    }

    /// The tokens `readToken` accepted, by their `Authorization` text: the simulator serves one
    /// key, so a token's signature and claims never change their meaning. A refused token is not kept.
    private static let readTokens = Mutex<[String: (app: Int, issued: Int, expires: Int)]>([:])

    /// A bearer token's app, issue and expiry times, when it is ES256 by the key, for one of the
    /// account's apps and the Server API's audience.
    private static func readToken(_ authorization: String, key: P256.Signing.PublicKey) -> (app: Int, issued: Int, expires: Int)? {
        let parts = authorization.dropFirst("Bearer ".count).split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let header = Data(base64URL: parts[0]), let claimBytes = Data(base64URL: parts[1]),
              let signatureBytes = Data(base64URL: parts[2]),
              let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signatureBytes),
              key.isValidSignature(signature, for: Data("\(parts[0]).\(parts[1])".utf8)),
              (try? JSONSerialization.jsonObject(with: header) as? [String: Any])?["alg"] as? String == "ES256",
              let claims = try? JSONSerialization.jsonObject(with: claimBytes) as? [String: Any],
              claims["aud"] as? String == "appstoreconnect-v1",
              let app = (claims["bid"] as? String).flatMap({ Catalog.bundleIDs.firstIndex(of: $0) }),
              let issued = claims["iat"] as? Int, let expires = claims["exp"] as? Int
        else { return nil }
        return (app, issued, expires)
    }
}
