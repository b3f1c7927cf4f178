import Foundation

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
    /// Which of Apple's endpoints was called.
    public var endpoint: AppleEndpoint
    public var outcome: VerificationOutcome
    /// Nil when no HTTP answer arrived.
    public var httpStatus: Int?
    public var latency: Duration
    /// Why the answer could not be used (an unreadable body or a transport failure), for the
    /// verification log. It never holds the request, so never the receipt or the secret.
    public var problem: String?

    public init(
        environment: AppStoreEnvironment, outcome: VerificationOutcome, httpStatus: Int? = nil, latency: Duration,
        problem: String? = nil, endpoint: AppleEndpoint = .verifyReceipt
    ) {
        self.environment = environment
        self.endpoint = endpoint
        self.outcome = outcome
        self.httpStatus = httpStatus
        self.latency = latency
        self.problem = problem
    }

    /// Whether the request left for Apple: an answer came back, or the call failed on the way
    /// (its latency is then the time it took to fail). An exchange that records a call not made (no
    /// leave, no Server API key, an id Apple would refuse) has neither.
    public var wasSent: Bool {
        if case .transportFailure = outcome { return true }
        return httpStatus != nil
    }

    /// A call the caller's `leave` refused as it was about to leave: nothing was sent.
    public static func notSent(to endpoint: AppleEndpoint, in environment: AppStoreEnvironment) -> VerificationExchange {
        VerificationExchange(
            environment: environment, outcome: .notSent, latency: .zero, problem: "its time slot passed before it could leave",
            endpoint: endpoint)
    }
}

/// The result of `AppStoreClient.verify`: one exchange, or two when Apple redirected to the
/// other environment (21007, 21008).
public struct Verification: Sendable {
    public var exchanges: [VerificationExchange]
    /// The last readable response, if any.
    public var response: VerifyReceiptResponse?

    public init(exchanges: [VerificationExchange], response: VerifyReceiptResponse?) {
        self.exchanges = exchanges
        self.response = response
    }

    /// The last exchange: the one the status policy judges.
    public var lastExchange: VerificationExchange { exchanges[exchanges.count - 1] }
    /// The outcome of the last exchange.
    public var outcome: VerificationOutcome { lastExchange.outcome }
    /// The environment that gave the last answer.
    public var environment: AppStoreEnvironment { lastExchange.environment }
}

/// Apple's verifyReceipt request, as bytes.
public enum VerifyReceiptRequest {
    /// `{"receipt-data": …, "password": …, "exclude-old-transactions": …}`.
    public static func body(
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
