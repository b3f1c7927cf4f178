import Foundation
import HTTPClient

/// Where verifyReceipt lives. Tests and the demo point these at the App Store simulator.
public struct AppStoreEndpoints: Sendable, Equatable {
    public var production: String
    public var sandbox: String

    public init(production: String, sandbox: String) {
        self.production = production
        self.sandbox = sandbox
    }

    /// Apple's own endpoints.
    public static let apple = AppStoreEndpoints(
        production: "https://buy.itunes.apple.com/verifyReceipt",
        sandbox: "https://sandbox.itunes.apple.com/verifyReceipt")

    public func url(for environment: AppStoreEnvironment) -> String {
        environment == .production ? production : sandbox
    }
}

/// One request to one environment and what came of it.
public struct VerificationExchange: Sendable {
    public var environment: AppStoreEnvironment
    public var outcome: VerificationOutcome
    /// Nil when no HTTP answer arrived.
    public var httpStatus: Int?
    public var latency: Duration
    /// Why the answer could not be used (an unreadable body or a transport failure), for the
    /// verification log. It never holds the request, so never the receipt or the secret.
    public var problem: String?
}

/// The result of `AppStoreClient.verify`: one exchange, or two when Apple redirected to the
/// other environment (21007, 21008).
public struct Verification: Sendable {
    public var exchanges: [VerificationExchange]
    /// The last readable response, if any.
    public var response: VerifyReceiptResponse?

    /// The outcome of the last exchange: the one the status policy judges.
    public var outcome: VerificationOutcome { exchanges[exchanges.count - 1].outcome }
    /// The environment that gave the last answer.
    public var environment: AppStoreEnvironment { exchanges[exchanges.count - 1].environment }
}

/// verifyReceipt over one HTTP connection per environment, kept alive between calls.
///
/// Like the HTTP client under it, a client blocks its thread and is not `Sendable`: each fleet
/// worker owns one.
public final class AppStoreClient {
    public let endpoints: AppStoreEndpoints
    private let http: HTTPClient

    public init(endpoints: AppStoreEndpoints, http configuration: HTTPClientConfiguration) throws {
        self.endpoints = endpoints
        http = try HTTPClient(configuration: configuration)
    }

    /// Verifies `receipt`, starting in `environment` (production, unless the subscription is known
    /// to live in the sandbox), and following Apple's redirects: 21007 from production goes on to
    /// the sandbox, 21008 from the sandbox goes on to production. At most one redirect is taken,
    /// and only once `mayRedirect` agrees: the redirect is one more request to Apple, so it takes
    /// a rate-limit token of its own (false ends the verification with the first answer).
    public func verify(
        _ receipt: ReceiptData, sharedSecret: SharedSecret?, excludeOldTransactions: Bool = true,
        startingIn environment: AppStoreEnvironment = .production, mayRedirect: () -> Bool
    ) -> Verification {
        let body = Self.requestBody(receipt, sharedSecret, excludeOldTransactions)
        var verification = Verification(exchanges: [], response: nil)
        var next: AppStoreEnvironment? = environment
        while let current = next, verification.exchanges.isEmpty || mayRedirect() {
            let (exchange, response) = send(body, to: current)
            verification.exchanges.append(exchange)
            if let response { verification.response = response }
            next = switch (current, response?.status, verification.exchanges.count) {
            case (.production, 21007, 1): .sandbox
            case (.sandbox, 21008, 1): .production
            default: nil
            }
        }
        return verification
    }

    private func send(_ body: [UInt8], to environment: AppStoreEnvironment) -> (VerificationExchange, VerifyReceiptResponse?) {
        let started = ContinuousClock.now
        var exchange = VerificationExchange(
            environment: environment, outcome: .transportFailure(.connectionReset), latency: .zero)
        do {
            let answer = try http.post(url: endpoints.url(for: environment), json: body)
            exchange.httpStatus = answer.status
            do {
                let response = try VerifyReceiptResponse(body: answer.body, httpStatus: answer.status)
                exchange.outcome = VerificationOutcome(response)
                exchange.latency = ContinuousClock.now - started
                return (exchange, response)
            } catch {
                exchange.outcome = VerificationOutcome(error)
                exchange.problem = error.description
            }
        } catch {
            exchange.outcome = .transportFailure(TransportFailure(error.kind))
            exchange.problem = error.description
        }
        exchange.latency = ContinuousClock.now - started
        return (exchange, nil)
    }

    /// Apple's request: `{"receipt-data": …, "password": …, "exclude-old-transactions": …}`.
    static func requestBody(
        _ receipt: ReceiptData, _ sharedSecret: SharedSecret?, _ excludeOldTransactions: Bool
    ) -> [UInt8] {
        var body = Array(#"{"receipt-data":"#.utf8)
        JSONText.appendString(receipt.base64, to: &body)
        if let sharedSecret {
            body += #","password":"#.utf8
            JSONText.appendString(sharedSecret.value, to: &body)
        }
        body += #","exclude-old-transactions":\#(excludeOldTransactions)}"#.utf8
        return body
    }
}

extension TransportFailure {
    init(_ kind: HTTPError.Kind) {
        self = switch kind {
        case .timeout: .timeout
        case .connectionRefused: .connectionRefused
        case .connectionReset: .connectionReset
        case .dns: .nameResolution
        case .tlsHandshake: .tlsHandshake
        case .protocolError: .protocolError
        case .tls: .tls
        case .refusedAddress, .other: .invalidRequest
        }
    }
}
