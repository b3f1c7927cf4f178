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
    /// `mayRedirect` agrees (it is one more call, and needs leave of its own). Apple's answer, once
    /// every signed payload in it verified and named the app, reads as verifyReceipt's status 0.
    public func statuses(
        of originalTransactionID: String, startingIn environment: AppStoreEnvironment = .production,
        mayRedirect: () -> Bool
    ) -> Verification {
        var verification = Verification(exchanges: [], response: nil)
        var next: AppStoreEnvironment? = environment
        while let current = next, verification.exchanges.isEmpty || mayRedirect() {
            var (exchange, response) = call(originalTransactionID, in: current)
            next = nil
            if exchange.outcome == .serverAPI(.notFound) {
                if verification.exchanges.isEmpty {
                    next = current == .production ? .sandbox : .production
                } else {
                    exchange.outcome = .serverAPI(.notFoundAnywhere)
                }
            }
            verification.exchanges.append(exchange)
            if let response { verification.response = response }
        }
        return verification
    }

    private func call(_ originalTransactionID: String, in environment: AppStoreEnvironment) -> (VerificationExchange, VerifyReceiptResponse?) {
        let started = ContinuousClock.now
        var exchange = VerificationExchange(environment: environment, outcome: .transportFailure(.invalidRequest), latency: .zero)
        var response: VerifyReceiptResponse?
        defer { exchange.latency = ContinuousClock.now - started }
        // Apple's transaction ids are digits; anything else would change the URL's meaning.
        guard !originalTransactionID.isEmpty, originalTransactionID.allSatisfy({ $0.isASCII && $0.isNumber }) else {
            exchange.problem = "the original transaction id is not a number"
            return (exchange, nil)
        }
        let url = endpoints.base(for: environment) + "/inApps/v1/subscriptions/" + originalTransactionID
        do {
            let answer = try http.get(url: url, headers: ["Authorization": "Bearer " + tokens.token()])
            exchange.httpStatus = answer.status
            (exchange.outcome, response, exchange.problem) = judge(answer)
        } catch {
            exchange.outcome = .transportFailure(TransportFailure(error.kind))
            exchange.problem = error.description
        }
        return (exchange, response)
    }

    /// What an answer means; a success is believed only once every signed payload verifies.
    private func judge(_ answer: HTTPResponse) -> (VerificationOutcome, VerifyReceiptResponse?, String?) {
        guard answer.status == 200 else {
            let error = ServerAPIErrorBody(body: answer.body)
            let named = "HTTP \(answer.status)" + (error.map { " error \($0.code)" } ?? "")
            let status: ServerAPIStatus? = switch (answer.status, error?.code) {
            case (404, ServerAPIErrorBody.transactionIDNotFound): .notFound
            case (429, _): .rateLimited(retryAfter: Self.retryAfter(answer.headers.values(for: "Retry-After").first))
            case (401, _): .unauthorized
            case (_, let code?): .failed(httpStatus: answer.status, code: code, retryable: answer.status >= 500 || Self.retryableCodes.contains(code))
            // No error body: a proxy's or a load balancer's answer.
            default: answer.status >= 500 ? .failed(httpStatus: answer.status, code: nil, retryable: true) : nil
            }
            let problem = status == .unauthorized ? "\(named) for key \(tokens.key.keyID)" : named
            return (status.map(VerificationOutcome.serverAPI) ?? .unreadableBody(httpStatus: answer.status), nil, problem)
        }
        let statuses: SubscriptionStatusesResponse
        do {
            statuses = try SubscriptionStatusesResponse(body: answer.body, httpStatus: answer.status)
        } catch {
            return (VerificationOutcome(error), nil, error.description)
        }
        do {
            let now = Date()
            let transactions = try statuses.lastTransactions.map { try verified($0.signedTransactionInfo, at: now) }
            let renewals = try statuses.lastTransactions.compactMap(\.signedRenewalInfo).map { try verified($0, at: now) }
            let response = try VerifyReceiptResponse(
                signedTransactions: transactions, renewals: renewals, environment: statuses.environment,
                bundleID: tokens.key.bundleID)
            return (VerificationOutcome(response), response, nil)
        } catch {
            return (.serverAPI(.untrusted), nil, "\(error)")
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
