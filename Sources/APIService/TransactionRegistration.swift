import AppStore
import Fleet
import FleetConfiguration
import Foundation

/// `POST /v1/transactions`: a StoreKit 2 app's purchase, which has no receipt. The app's back end
/// sends the signed transaction the device holds (`Transaction.jwsRepresentation`), or just a
/// transaction id; the fleet asks the App Store Server API about it as a registration asks
/// verifyReceipt about a receipt, and watches its subscriptions on the Server API from then on.
struct TransactionRegistrationRequest: Decodable, Sendable {
    var signedTransaction: String?
    var transactionID: String?
    var accountID: String?
    /// The deployment's name for the purchase's app; a signed transaction names its bundle id,
    /// which decides. A transaction id alone is the Server API key's app's unless this names another.
    var app: String?

    enum CodingKeys: String, CodingKey {
        case signedTransaction = "signed_transaction"
        case transactionID = "transaction_id"
        case accountID = "account_id"
        case app
    }

    /// What to ask Apple about, where to start, and for which app (`named`: the request's, checked).
    /// A signed transaction must verify to the trusted root and name one of the deployment's apps;
    /// a transaction id alone proves nothing of who bought it, so it cannot link an account
    /// (anyone could name anyone's purchase).
    func validated(by serverAPI: ServerAPISettings, apps: AppCatalog, named: String?, now: Date) async throws(APIError)
        -> (originalTransactionID: String, environment: AppStoreEnvironment, accountID: String?, app: String?)
    {
        if let accountID { _ = try APIError.checkedID(accountID, "account_id") }
        switch (signedTransaction, transactionID) {
        case (let jws?, nil):
            let transaction = try await Self.verified(jws, by: serverAPI, apps: apps, now: now)
            if let named, named != transaction.app {
                throw APIError(.unprocessableContent, "wrong_app", "the signed transaction is the app \(transaction.app)'s, not \(named)'s")
            }
            return (transaction.originalTransactionID, transaction.environment, accountID, transaction.app)
        case (nil, let id?):
            guard accountID == nil else {
                throw .badRequest("account_needs_signed_transaction",
                                  "a transaction id alone proves nothing of who bought it: send 'signed_transaction' to link 'account_id'")
            }
            guard (1...32).contains(id.count), id.allSatisfy({ $0.isASCII && $0.isNumber }) else {
                throw .badRequest("invalid_transaction_id", "'transaction_id' must be Apple's transaction id: 1 to 32 digits")
            }
            return (id, .production, nil, named ?? apps.app(bundleID: serverAPI.key.bundleID)?.name)
        default:
            throw .badRequest("one_transaction", "send exactly one of 'signed_transaction' and 'transaction_id'")
        }
    }

    /// The signed transaction's original transaction, environment and app, once its chain and
    /// signature hold and it names one of the deployment's apps.
    private static func verified(_ jws: String, by serverAPI: ServerAPISettings, apps: AppCatalog, now: Date) async throws(APIError)
        -> (originalTransactionID: String, environment: AppStoreEnvironment, app: String)
    {
        let payload: Data
        do {
            payload = try await serverAPI.signatures.payload(of: jws, at: now)
        } catch {
            throw APIError(.unprocessableContent, "invalid_signed_transaction", "the signed transaction does not verify: \(error)")
        }
        let fields = (try? JSONValue.parse(payload))?.members ?? [:]
        let bundleID = fields.string("bundleId")
        guard let app = apps.app(signedFor: bundleID) else {
            throw APIError(.unprocessableContent, "invalid_signed_transaction",
                           "the signed transaction is for another app (bundle id \(bundleID ?? "none"))")
        }
        guard let id = fields.string("originalTransactionId"), !id.isEmpty, id.allSatisfy({ $0.isASCII && $0.isNumber }) else {
            throw APIError(.unprocessableContent, "invalid_signed_transaction", "the signed transaction names no original transaction id")
        }
        return (id, AppStoreEnvironment(rawValue: fields.string("environment") ?? "") ?? .production, app.name)
    }
}

extension Registrar {
    /// Asks the Server API about the transaction now, under the fleet's halt, pause and rate
    /// limit, and stores what it shows. There is no queued (202) answer: without a receipt to keep,
    /// a registration Apple cannot be asked about now fails with 503, and the app tries again.
    func register(_ request: TransactionRegistrationRequest) async throws -> RegistrationResponse {
        guard let serverAPI = fleet.serverAPI else {
            throw APIError(.notImplemented, "server_api_not_configured",
                           "this deployment has no App Store Server API key; see docs/appstore-server-api.md")
        }
        let (originalTransactionID, environment, accountID, app) = try await request.validated(
            by: serverAPI, apps: fleet.apps, named: try app(named: request.app), now: clock.now())
        return try await redisRest.guarding {
            try await register(originalTransactionID: originalTransactionID, environment: environment, accountID: accountID, app: app)
        }
    }

    private func register(
        originalTransactionID: String, environment: AppStoreEnvironment, accountID: String?, app: String?
    ) async throws -> RegistrationResponse {
        let probing = try await admission(to: .subscriptionStatuses, forApp: app)
        let (fleet, metrics, logger) = (fleet, metrics, logger)
        return try await lanes.run { connections in
            try Self.verifyAndStore(
                .transaction(originalTransactionID: originalTransactionID, knownLatestTransactionID: nil, refunds: .due, onlyIn: nil),
                startingIn: environment,
                accountID: accountID, probing: probing, fleet: fleet, app: app, metrics: metrics, connections: connections,
                logger: logger)
        }
    }
}
