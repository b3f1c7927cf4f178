import AppStore
import HTTPClient

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
    /// the sandbox, 21008 from the sandbox goes on to production. At most one redirect is taken.
    /// `leave` is asked right before each request leaves, its body built: the first must still be
    /// on time, and the redirect is one more request to Apple, which takes a rate-limit token of its
    /// own. Refused, the request is not sent: the verification ends with the first answer, or
    /// (the first refused) with `.notSent`.
    public func verify(
        _ receipt: ReceiptData, sharedSecret: SharedSecret?, excludeOldTransactions: Bool = true,
        startingIn environment: AppStoreEnvironment = .production, leave: () -> Bool
    ) -> Verification {
        let body = VerifyReceiptRequest.body(receipt, sharedSecret, excludeOldTransactions)
        var verification = Verification(exchanges: [], response: nil)
        var next: AppStoreEnvironment? = environment
        while let current = next {
            guard leave() else {
                if verification.exchanges.isEmpty { verification.exchanges = [.notSent(to: .verifyReceipt, in: current)] }
                break
            }
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
