import AccessTokens
import AppStore
import Crypto
import Fleet
import FleetConfiguration
import Foundation

/// What an App Store Server Notification says, once it has been authenticated: which
/// subscription something happened to, and for V2 what Apple signed of it. The fleet then asks
/// Apple *what* happened, to confirm.
struct AppleNotification: Sendable {
    var version: Int
    /// The deployment's app it is for, by its bundle id (`bid`, `bundleId`).
    var app: String
    /// V2: `v2:` + notificationUUID. V1 has no id: `v1:sha256:` + the hash of its content, keys sorted.
    var dedupeKey: String
    var type: String
    var subtype: String?
    /// What Apple says `type` means; nil for a type this version does not know.
    var meaning: String? { notificationTypeMeaning(type) }
    /// nil when the notification does not say (then it is accepted).
    var environment: AppStoreEnvironment?
    var originalTransactionID: String?
    /// V1 only: `unified_receipt.latest_receipt`, to start watching a subscription the ledger lacks.
    var latestReceipt: ReceiptData?
    /// V2: the signed transaction and renewal info, verified and bound to the app, read as the
    /// Server API's answer; nil when the notification carries no transaction or they do not read.
    var signedData: VerifyReceiptResponse?
    /// V2 CONSUMPTION_REQUEST: the transaction a customer asked Apple to refund.
    var consumptionRequest: ConsumptionRequested?
    /// V2: the notification's `signedDate`, when Apple signed it.
    var signedAt: Date?
}

/// What a CONSUMPTION_REQUEST says of the purchase, as Apple signed it.
struct ConsumptionRequested: Sendable {
    var transactionID: String
    /// Apple's `type` of the transaction.
    var productType: String?
    var familyShared: Bool
    /// Apple's `consumptionRequestReason`.
    var reason: String?
    /// The notification's `signedDate`: Apple's 12 hours run from it.
    var signedAt: Date
}

/// Reads notifications of both versions, checks that Apple sent them, and finds the app they are for.
struct NotificationReader: Sendable {
    /// The deployment's apps, with their bundle ids (none configured: V2 notifications cannot be
    /// accepted) and Apple ids; V1 carries the app's shared secret as `password` (see
    /// `FleetSettings.sharedSecrets(forApp:)`): the current one or, during a rotation, the previous
    /// one (Apple may send either while the switch spreads). None: V1 notifications cannot be accepted.
    let fleet: FleetSettings
    /// nil (no trusted root configured): V2 notifications cannot be accepted.
    let verifier: SignedPayloadVerifier?

    enum Failure: Error {
        /// Not a notification of either version.
        case malformed(String)
        /// Not from Apple: wrong password, or a signature or chain that does not verify.
        case unauthenticated(version: Int, String)
        /// This server cannot check this version (no shared secret / no trusted root).
        case unconfigured(version: Int, String)
    }

    func read(_ body: Data, now: Date) async throws(Failure) -> AppleNotification {
        guard let object = (try? JSONValue.parse(body, refusingRepeatedKeys: true))?.members else {
            throw .malformed("the body is not a JSON object with each key once")
        }
        if let signed = object.string("signedPayload") { return try await readV2(signed, now: now) }
        if object.string("notification_type") != nil { return try readV1(object, body: body) }
        throw .malformed("neither a V2 notification (signedPayload) nor a V1 one (notification_type, password)")
    }

    private func readV1(_ object: [String: JSONValue], body: Data) throws(Failure) -> AppleNotification {
        let bundleID = object.string("bid")
        // Apple documents `bid` on every V1 notification; one without it can only be a single app's.
        let only = fleet.apps.apps.count == 1 && bundleID == nil ? fleet.apps.apps.first : nil
        guard let app = fleet.apps.app(bundleID: bundleID) ?? only else {
            throw .unauthenticated(version: 1, "for another app (bid \(bundleID ?? "none"))")
        }
        let sharedSecrets = fleet.sharedSecrets(forApp: app.name)
        guard !sharedSecrets.isEmpty else {
            throw .unconfigured(version: 1, "V1 notifications need the shared secret (RECEIPTFLEET_SHARED_SECRET) to be checked")
        }
        let given = object.string("password").map { Array(SHA256.hash(data: Array($0.utf8))) }
        // Every secret is compared, so the time taken says nothing about which one matched.
        let matches = sharedSecrets.map { secret in given.map { digestsEqual($0, Array(SHA256.hash(data: Array(secret.value.utf8)))) } ?? false }
        guard matches.contains(true) else {
            throw .unauthenticated(version: 1, "the password is not the app's shared secret")
        }
        var notification = AppleNotification(
            version: 1, app: app.name, dedupeKey: "v1:sha256:" + Self.canonicalHash(of: body),
            type: object.string("notification_type") ?? "")
        notification.environment = object.string("environment").flatMap(Self.v1Environment)
        let unified = object["unified_receipt"]?.members.flatMap { VerifyReceiptResponse(fields: $0, httpStatus: 200) }
        notification.latestReceipt = unified?.latestReceipt
        notification.originalTransactionID = V1NotificationSubject.originalTransactionID(in: object, unifiedReceipt: unified)
        return notification
    }

    private func readV2(_ signedPayload: String, now: Date) async throws(Failure) -> AppleNotification {
        guard let verifier else {
            throw .unconfigured(version: 2, "V2 notifications need a trusted root certificate (apple-root-certificate)")
        }
        guard !fleet.apps.bundleIDs.isEmpty else {
            throw .unconfigured(version: 2, "V2 notifications need the apps' bundle ids (apple-bundle-id or apps-file) to be checked")
        }
        let payload = try await verifiedPayload(signedPayload, by: verifier, now: now).fields
        guard let type = payload.string("notificationType"), let uuid = payload.string("notificationUUID") else {
            throw .malformed("the signed payload has no notificationType or notificationUUID")
        }
        let data = payload["data"]?.members ?? payload["summary"]?.members
        var notification = AppleNotification(
            version: 2, app: try app(of: data).name, dedupeKey: "v2:" + uuid, type: type, subtype: payload.string("subtype"))
        notification.environment = data?.string("environment").flatMap { AppStoreEnvironment(rawValue: $0) }
        notification.signedAt = payload["signedDate"]?.text.flatMap(Int64.init).map { Date(timeIntervalSince1970: Double($0) / 1000) }
        if let signedTransaction = data?.string("signedTransactionInfo") {
            let (transactionPayload, transaction) = try await verifiedPayload(signedTransaction, by: verifier, now: now)
            guard try app(of: transaction).name == notification.app else {
                throw .unauthenticated(version: 2, "its transaction is another app's than the notification")
            }
            notification.originalTransactionID = transaction.text("originalTransactionId")
            if type == "CONSUMPTION_REQUEST", let transactionID = transaction.text("transactionId"), let signedAt = notification.signedAt {
                notification.consumptionRequest = ConsumptionRequested(
                    transactionID: transactionID, productType: transaction.string("type"),
                    familyShared: transaction.string("inAppOwnershipType") == "FAMILY_SHARED", reason: data?.string("consumptionRequestReason"),
                    signedAt: signedAt)
            }
            var renewals: [Data] = []
            if let signedRenewal = data?.string("signedRenewalInfo") {
                renewals.append(try await verifiedPayload(signedRenewal, by: verifier, now: now).payload)
            }
            // The bundle id was checked above; the environment is the notification's.
            notification.signedData = try? VerifyReceiptResponse(
                signedTransactions: [transactionPayload], renewals: renewals, environment: notification.environment,
                bundleID: transaction.string("bundleId") ?? "", showsEveryRefund: false)
        }
        return notification
    }

    /// Apple signs notifications for every app of every developer with one chain: the signature
    /// proves Apple sent it, the bundle id (and the app's Apple id, when configured) which of ours it is.
    private func app(of fields: [String: JSONValue]?) throws(Failure) -> AppConfiguration {
        let bundleID = fields?.string("bundleId")
        guard let app = fleet.apps.app(signedFor: bundleID) else {
            throw .unauthenticated(version: 2, "signed for another app (bundle id \(bundleID ?? "none"))")
        }
        if let appAppleID = app.appleID, let sent = fields?["appAppleId"], sent.text != String(appAppleID) {
            throw .unauthenticated(version: 2, "signed for another app (app Apple id \(sent.text ?? "unreadable"))")
        }
        return app
    }

    /// A signed payload, once its chain and signature hold: its bytes, and them read as a JSON object.
    private func verifiedPayload(
        _ jws: String, by verifier: SignedPayloadVerifier, now: Date
    ) async throws(Failure) -> (payload: Data, fields: [String: JSONValue]) {
        let payload: Data
        do {
            payload = try await verifier.payload(of: jws, at: now)
        } catch {
            throw .unauthenticated(version: 2, error.description)
        }
        guard let object = (try? JSONValue.parse(payload))?.members else { throw .malformed("the signed payload is not a JSON object") }
        return (payload, object)
    }

    /// The hash of a V1 body's content, keys sorted, so that a copy re-serialized on the way still
    /// matches. Foundation's spelling of the sorted content, as every stored key was made with: another
    /// spelling would let through, as new, a notification Apple delivers again after an upgrade.
    private static func canonicalHash(of body: Data) -> String {
        let object = try? JSONSerialization.jsonObject(with: body)
        let canonical = object.flatMap { try? JSONSerialization.data(withJSONObject: $0, options: [.sortedKeys]) } ?? body
        return SHA256.hash(data: canonical).map { String(format: "%02x", $0) }.joined()
    }

    /// V1 spells production "PROD".
    private static func v1Environment(_ text: String) -> AppStoreEnvironment? {
        switch text.uppercased() {
        case "PROD", "PRODUCTION": .production
        case "SANDBOX": .sandbox
        default: nil
        }
    }
}

extension [String: JSONValue] {
    /// The member named `key` when it is a string: Apple's notifications spell these fields only so.
    func string(_ key: String) -> String? {
        if case .string(let value)? = self[key] { value } else { nil }
    }
}
