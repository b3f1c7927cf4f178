import AppStore
import Foundation
import HTTPClient

/// Where the App Store Server API lives: Apple's two hosts, or the simulator's.
public struct ServerAPIEndpoints: Sendable, Equatable {
    public static let apple = ServerAPIEndpoints(
        production: "https://api.storekit.itunes.apple.com", sandbox: "https://api.storekit-sandbox.itunes.apple.com")

    public var production: String
    public var sandbox: String

    public init(production: String, sandbox: String) {
        self.production = production
        self.sandbox = sandbox
    }

    func base(for environment: AppStoreEnvironment) -> String {
        environment == .production ? production : sandbox
    }
}

/// The App Store Server API over one HTTP connection per host, kept alive between calls; signs
/// its requests with the key's cached tokens and checks every signed payload Apple returns.
///
/// Like the HTTP client under it, it blocks its thread and is not `Sendable`: each worker owns one.
public final class ServerAPIClient {
    /// Error codes Apple documents as worth retrying (`…RetryableError`).
    static let retryableCodes: Set<Int> = [4_040_002, 4_040_004, 4_040_006, 5_000_001]

    public let endpoints: ServerAPIEndpoints
    let tokens: ServerAPITokens
    let signatures: SignedPayloadVerifier
    let http: HTTPClient
    /// The fleet's now: what signed payloads are verified at, refunds fall due by and Retry-After
    /// counts from.
    let now: @Sendable () -> Date

    public init(
        endpoints: ServerAPIEndpoints, tokens: ServerAPITokens, signatures: SignedPayloadVerifier,
        http configuration: HTTPClientConfiguration, now: @escaping @Sendable () -> Date
    ) throws {
        self.endpoints = endpoints
        self.tokens = tokens
        self.signatures = signatures
        self.now = now
        http = try HTTPClient(configuration: configuration)
    }

    /// How many pages of a customer's transaction history one verification reads at most (20 transactions each).
    static let historyPageLimit = 50

    /// What Apple says of the subscription of `originalTransactionID`: Get All Subscription
    /// Statuses, starting in `environment` and going on to the other one when Apple does not know
    /// the transaction there (unless `onlyIn` names the one environment to ask); then, when the latest transaction is not `knownLatestTransactionID`
    /// (something happened since the fleet last looked), the customer's transaction history too, so
    /// that what came between (a renewal, a trial's end, an upgrade, the first purchase) is seen as a
    /// receipt shows it; otherwise, when `refunds` are due, its refunded transactions (a refund of
    /// an earlier period changes no status). A quiet subscription costs one call, two on the nights
    /// its refunds are due. `leave` is asked right before each call leaves: the first must still be
    /// on time, and every further one needs leave of its own from its endpoint's budget. Refused,
    /// the call is not made: the verification ends there, unfinished, to be tried again (the first
    /// refused: `.notSent`).
    ///
    /// Apple's answer, once every signed payload in it verified and named the app, reads as
    /// verifyReceipt's status 0 (`Verification.response`).
    public func verify(
        originalTransactionID: String, knownLatestTransactionID: String?, refunds: RefundCheck, onlyIn: AppStoreEnvironment? = nil,
        startingIn environment: AppStoreEnvironment = .production, leave: (AppleEndpoint) -> Bool
    ) -> Verification {
        let environment = onlyIn ?? environment
        var verification = Verification(exchanges: [], response: nil)
        // Apple's transaction ids are digits; anything else would change the URL's meaning, and
        // Apple would refuse it (InvalidOriginalTransactionIdError).
        guard !originalTransactionID.isEmpty, originalTransactionID.allSatisfy({ $0.isASCII && $0.isNumber }) else {
            verification.exchanges = [VerificationExchange(
                environment: environment, outcome: .serverAPI(.failed(httpStatus: 400, code: 4_000_008, retryable: false)),
                latency: .zero, problem: "the original transaction id is not a number", endpoint: .subscriptionStatuses)]
            return verification
        }
        var signed = SignedAnswer()
        var next: AppStoreEnvironment? = environment
        while let current = next {
            guard leave(.subscriptionStatuses) else {
                if verification.exchanges.isEmpty { verification.exchanges = [.notSent(to: .subscriptionStatuses, in: current)] }
                break
            }
            next = nil
            var (exchange, answer) = call("/inApps/v1/subscriptions/" + Self.pathSegment(originalTransactionID), .subscriptionStatuses, in: current)
            if let answer { signed = statuses(answer, into: &exchange) ?? signed }
            if exchange.outcome == .serverAPI(.notFound) {
                if verification.exchanges.isEmpty, onlyIn == nil {
                    next = current.other
                } else {
                    exchange.outcome = .serverAPI(.notFoundAnywhere)
                }
            }
            verification.exchanges.append(exchange)
        }
        guard verification.outcome == .status(0, isRetryable: nil) else { return verification }
        do {
            // Something happened since the fleet last looked: the whole history shows what came
            // between. Otherwise only a refund of an earlier period can have changed, which the
            // statuses never show: the revoked transactions tell (usually an empty page).
            let statuses = try read(signed)
            let changed = latestTransactionID(in: statuses, of: originalTransactionID) != knownLatestTransactionID
            guard changed || refunds.isDue(at: statuses.receipt?.requestDate ?? Instant(now())) else {
                verification.response = statuses  // a quiet night: the statuses are the whole answer
                return verification
            }
            guard readHistory(of: originalTransactionID, revokedOnly: !changed, into: &signed, &verification, leave: leave)
            else { return verification }
            signed.showsEveryRefund = true
            verification.response = try read(signed)
        } catch {
            verification.exchanges[verification.exchanges.count - 1].outcome = .serverAPI(.untrusted)
            verification.exchanges[verification.exchanges.count - 1].problem = "\(error)"
        }
        return verification
    }

    /// Reads the customer's transaction history (`revokedOnly`: its refunded and revoked
    /// transactions) page by page into `signed`, each call with the gate's leave. False when the
    /// verification ended on the way: no leave (`.unfinished`, to be tried again), or an answer
    /// that could not be used (its exchange says why).
    private func readHistory(
        of originalTransactionID: String, revokedOnly: Bool, into signed: inout SignedAnswer, _ verification: inout Verification,
        leave: (AppleEndpoint) -> Bool
    ) -> Bool {
        var revision: String?
        for _ in 0..<Self.historyPageLimit {
            guard leave(.transactionHistory) else {
                verification.exchanges[verification.exchanges.count - 1].outcome = .serverAPI(.unfinished)
                return false
            }
            let query = ((revokedOnly ? ["revoked=true"] : [])
                + (revision.map { ["revision=" + ($0.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")] } ?? []))
            let path = "/inApps/v2/history/" + Self.pathSegment(originalTransactionID) + (query.isEmpty ? "" : "?" + query.joined(separator: "&"))
            var (exchange, answer) = call(path, .transactionHistory, in: verification.environment)
            let page = answer.flatMap { history($0, into: &exchange, adding: &signed) }
            verification.exchanges.append(exchange)
            guard let page else { return false }
            guard page.hasMore, let next = page.revision else { return true }
            revision = next
        }
        return true
    }

    /// The verified payloads of a verification's answers so far.
    struct SignedAnswer {
        var transactions: [Data] = []
        var renewals: [Data] = []
        var environment: AppStoreEnvironment?
        /// The history (or its refunded transactions) was read too.
        var showsEveryRefund = false
    }

    /// The payloads read as the analysis reads them, each bound to the app.
    private func read(_ signed: SignedAnswer) throws(SignedPayloadError) -> VerifyReceiptResponse {
        try VerifyReceiptResponse(
            signedTransactions: signed.transactions, renewals: signed.renewals, environment: signed.environment,
            bundleID: tokens.key.bundleID, showsEveryRefund: signed.showsEveryRefund)
    }

    /// The subscription's newest transaction, by purchase date.
    private func latestTransactionID(in response: VerifyReceiptResponse, of originalTransactionID: String) -> String? {
        response.latestReceiptInfo.filter { $0.originalTransactionID == originalTransactionID }
            .max { ($0.purchaseDate ?? .init(Date.distantPast)) < ($1.purchaseDate ?? .init(Date.distantPast)) }?.transactionID
    }

    /// One GET: the exchange, with the answer when it is a 200 to read further, or the outcome of
    /// an error answer or a failed call.
    private func call(
        _ path: String, _ endpoint: AppleEndpoint, in environment: AppStoreEnvironment
    ) -> (VerificationExchange, HTTPResponse?) {
        let started = ContinuousClock.now
        var exchange = VerificationExchange(
            environment: environment, outcome: .status(0, isRetryable: nil), latency: .zero, endpoint: endpoint)
        var answer: HTTPResponse?
        do {
            let reply = try http.get(url: endpoints.base(for: environment) + path, headers: ["Authorization": "Bearer " + tokens.token()])
            exchange.httpStatus = reply.status
            if reply.status == 200 {
                answer = reply
            } else {
                (exchange.outcome, exchange.problem) = refusal(reply)
            }
        } catch {
            exchange.outcome = .transportFailure(TransportFailure(error.kind))
            exchange.problem = error.description
        }
        exchange.latency = ContinuousClock.now - started
        return (exchange, answer)
    }
}
