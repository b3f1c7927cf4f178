import AppStore
import Foundation
import HTTPClient
import Synchronization

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

/// What one call to the Server API got.
public enum ServerAPIOutcome: Sendable {
    /// Apple's answer, its signed payloads verified and bound to the app, as the analysis reads it.
    case answered(VerifyReceiptResponse)
    /// This environment knows no such transaction (4040010): the other one may.
    case notFound
    /// HTTP 429: this endpoint's budget is spent until `retryAfter` (when Apple said).
    case rateLimited(retryAfter: Duration?)
    /// HTTP 401: Apple refuses the key (wrong issuer, key id or .p8, or a revoked key).
    case unauthorized
    /// Another error answer; `retryable` for 5xx and the codes Apple documents as retryable.
    case failed(httpStatus: Int, code: Int?, retryable: Bool)
    /// An answer whose signed payload does not verify, or is another app's: never believed.
    case untrusted(String)
    /// A body that is not the answer it should be (a proxy's page, truncated JSON).
    case unreadableBody(httpStatus: Int)
    case transportFailure(TransportFailure)
}

/// One call: where it went, what it got, how long it took; `problem` names what went wrong (curl's
/// error, Apple's error code), never a token, a header or a body.
public struct ServerAPIExchange: Sendable {
    public var environment: AppStoreEnvironment
    public var outcome: ServerAPIOutcome
    public var httpStatus: Int?
    public var latency: Duration
    public var problem: String?
}

/// The App Store Server API over one HTTP connection per host, kept alive between calls; signs
/// its requests with the key's cached tokens and checks every signed payload Apple returns.
///
/// Like the HTTP client under it, it blocks its thread and is not `Sendable`: each worker owns one.
public final class ServerAPIClient {
    /// Error codes Apple documents as worth retrying (`…RetryableError`).
    static let retryableCodes: Set<Int> = [4_040_002, 4_040_004, 4_040_006, 5_000_001]

    public let endpoints: ServerAPIEndpoints
    private let tokens: ServerAPITokens
    private let signatures: SignedPayloadVerifier
    private let http: HTTPClient

    public init(
        endpoints: ServerAPIEndpoints, tokens: ServerAPITokens, signatures: SignedPayloadVerifier,
        http configuration: HTTPClientConfiguration
    ) throws {
        self.endpoints = endpoints
        self.tokens = tokens
        self.signatures = signatures
        http = try HTTPClient(configuration: configuration)
    }

    /// Get All Subscription Statuses for the subscription of `originalTransactionID`, starting in
    /// `environment`; when Apple does not know the transaction there, the other environment, once
    /// `mayRedirect` agrees (it is one more call, and needs leave of its own).
    public func statuses(
        of originalTransactionID: String, startingIn environment: AppStoreEnvironment = .production,
        mayRedirect: () -> Bool
    ) -> [ServerAPIExchange] {
        var exchanges = [call(originalTransactionID, in: environment)]
        if case .notFound = exchanges[0].outcome, mayRedirect() {
            exchanges.append(call(originalTransactionID, in: environment == .production ? .sandbox : .production))
        }
        return exchanges
    }

    private func call(_ originalTransactionID: String, in environment: AppStoreEnvironment) -> ServerAPIExchange {
        let started = ContinuousClock.now
        var exchange = ServerAPIExchange(environment: environment, outcome: .transportFailure(.invalidRequest), latency: .zero)
        defer { exchange.latency = ContinuousClock.now - started }
        // Apple's transaction ids are digits; anything else would change the URL's meaning.
        guard !originalTransactionID.isEmpty, originalTransactionID.allSatisfy({ $0.isASCII && $0.isNumber }) else {
            exchange.problem = "the original transaction id is not a number"
            return exchange
        }
        let url = endpoints.base(for: environment) + "/inApps/v1/subscriptions/" + originalTransactionID
        let answer: HTTPResponse
        do {
            answer = try http.get(url: url, headers: ["Authorization": "Bearer " + tokens.token()])
        } catch {
            exchange.outcome = .transportFailure(TransportFailure(error.kind))
            exchange.problem = error.description
            return exchange
        }
        exchange.httpStatus = answer.status
        (exchange.outcome, exchange.problem) = judge(answer)
        return exchange
    }

    /// What an answer means; a success is believed only once every signed payload verifies.
    private func judge(_ answer: HTTPResponse) -> (ServerAPIOutcome, String?) {
        guard answer.status == 200 else {
            let error = ServerAPIErrorBody(body: answer.body)
            let named = "HTTP \(answer.status)" + (error.map { " error \($0.code)" } ?? "")
            switch (answer.status, error?.code) {
            case (404, ServerAPIErrorBody.transactionIDNotFound): return (.notFound, named)
            case (429, _): return (.rateLimited(retryAfter: Self.retryAfter(answer.headers.values(for: "Retry-After").first)), named)
            case (401, _): return (.unauthorized, named)
            case (_, .some(let code)):
                return (.failed(httpStatus: answer.status, code: code, retryable: answer.status >= 500 || Self.retryableCodes.contains(code)), named)
            default:
                // No error body: a proxy's or a load balancer's answer.
                return answer.status >= 500 ? (.failed(httpStatus: answer.status, code: nil, retryable: true), named)
                    : (.unreadableBody(httpStatus: answer.status), named)
            }
        }
        let statuses: SubscriptionStatusesResponse
        do {
            statuses = try SubscriptionStatusesResponse(body: answer.body, httpStatus: answer.status)
        } catch {
            return (.unreadableBody(httpStatus: answer.status), error.description)
        }
        do {
            let now = Date()
            let transactions = try statuses.lastTransactions.map { try verified($0.signedTransactionInfo, at: now) }
            let renewals = try statuses.lastTransactions.compactMap(\.signedRenewalInfo).map { try verified($0, at: now) }
            return (.answered(try VerifyReceiptResponse(
                signedTransactions: transactions, renewals: renewals, environment: statuses.environment,
                bundleID: tokens.key.bundleID)), nil)
        } catch {
            return (.untrusted("\(error)"), "\(error)")
        }
    }

    /// The payload of `jws`, once its chain and signature hold. The check is CPU work only, done on
    /// Swift's pool while this thread (a worker's own) waits for it.
    private func verified(_ jws: String, at now: Date) throws -> Data {
        let signatures = signatures
        let result = Mutex<Result<Data, SignatureError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task {
            let checked: Result<Data, SignatureError>
            do throws(SignatureError) { checked = .success(try await signatures.payload(of: jws, at: now)) } catch { checked = .failure(error) }
            result.withLock { $0 = checked }
            done.signal()
        }
        done.wait()
        return try result.withLock { $0! }.get()
    }

    /// Retry-After as Apple or a proxy writes it: seconds to wait, or a UNIX time in milliseconds.
    public static func retryAfter(_ value: String?, now: Date = Date()) -> Duration? {
        guard let value, let number = Int64(value.trimmingCharacters(in: .whitespaces)), number >= 0 else { return nil }
        guard number > 100_000_000_000 else { return .seconds(number) }
        let wait = Double(number) / 1000 - now.timeIntervalSince1970
        return .milliseconds(max(0, Int64(wait * 1000)))
    }
}
