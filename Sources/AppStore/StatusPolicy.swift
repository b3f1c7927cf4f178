/// How a verifyReceipt request can fail before Apple answers. The HTTP client maps its own errors
/// onto these; a failure that fits none (e.g. a send or receive error) is a `connectionReset`.
public enum TransportFailure: Sendable, Hashable, CaseIterable {
    case timeout
    case connectionRefused
    case connectionReset
    case nameResolution
    /// The TLS handshake broke off (curl 35): usually passing, but https to a plain port when it never stops.
    case tlsHandshake
    /// The answer broke HTTP (curl 8, 16, 92): usually passing, but no HTTP server there when it never stops.
    case protocolError
    /// The certificate did not verify, or this machine's TLS setup cannot be used: a problem with
    /// this machine's setup (CA bundle, clock, intercepting proxy), not with any receipt.
    case tls
    /// The request could not be made at all (a malformed or unsupported URL): a configuration error.
    case invalidRequest
}

/// What came back from one attempt, reduced to what the policy looks at.
public enum VerificationOutcome: Sendable, Hashable {
    /// verifyReceipt answered with a readable body (the Server API's verified answer reads as status 0).
    case status(Int, isRetryable: Bool?)
    /// An HTTP answer whose body could not be read (typically an error page).
    case unreadableBody(httpStatus: Int)
    case transportFailure(TransportFailure)
    /// The App Store Server API answered with an error, or with signed data that is not believed.
    case serverAPI(ServerAPIStatus)
    /// The call was not made: its time slot passed before it could leave (the worker was starved
    /// of CPU), and no other could be had at once (the fleet paused or halted, or the endpoint's
    /// budget was spent, since it was admitted).
    case notSent

    public init(_ response: VerifyReceiptResponse) {
        self = .status(response.status, isRetryable: response.isRetryable)
    }

    public init(_ error: ResponseDecodingError) {
        self = .unreadableBody(httpStatus: error.httpStatus)
    }

    /// A short, stable name for grouping failures: "apple.21002", "http.503", "timeout".
    public var errorClass: String { names.errorClass }

    /// For messages: Apple's status or what went wrong on the way, never a body.
    public var summary: String { names.summary }

    private var names: (errorClass: String, summary: String) {
        switch self {
        case .status(let status, _): ("apple.\(status)", "status \(status)")
        case .unreadableBody(let httpStatus): ("http.\(httpStatus)", "HTTP \(httpStatus) with an unreadable body")
        case .transportFailure(let failure): ("\(failure)", "\(failure)")
        case .serverAPI(let status): ("server_api.\(status.name)", "the App Store Server API's \(status.name)")
        case .notSent: ("not_sent", "not sent: the fleet stopped calling Apple meanwhile")
        }
    }
}

/// How the App Store Server API said no (`{"errorCode": …}`, or its HTTP status).
public enum ServerAPIStatus: Sendable, Hashable {
    /// This environment knows no such transaction (4040010), and the other was not asked.
    case notFound
    /// The answer needed another call (a page of the transaction history) that was not allowed now.
    case unfinished
    /// Neither environment knows the transaction: as 21010, the purchase is not Apple's to vouch for.
    case notFoundAnywhere
    /// HTTP 429: the endpoint's rate limit is spent, until `retryAfter` when Apple said.
    case rateLimited(retryAfter: Duration?)
    /// HTTP 401: Apple refuses the key.
    case unauthorized
    /// Another error answer; `retryable` for 5xx and the codes Apple documents as retryable.
    case failed(httpStatus: Int, code: Int?, retryable: Bool)
    /// A signed payload that does not verify to the trusted root, or names another app.
    case untrusted
    /// This process has no Server API key configured, so it cannot ask.
    case notConfigured

    /// A short, stable name, for metrics' labels and error classes: "not_found", "rate_limited"…
    public var name: String {
        switch self {
        case .notFound, .notFoundAnywhere: "not_found"
        case .unfinished: "unfinished"
        case .rateLimited: "rate_limited"
        case .unauthorized: "unauthorized"
        case .failed(let status, let code, _): code.map { "error_\($0)" } ?? "http_\(status)"
        case .untrusted: "untrusted"
        case .notConfigured: "not_configured"
        }
    }
}

/// What the fleet does next with one subscription's verification.
public enum VerificationAction: Sendable, Hashable {
    /// Analyse the response.
    case success
    /// 21006: an iOS 6 receipt whose subscription expired; the response is decoded: analyse it.
    case expiredButValid
    /// 21007: a sandbox receipt sent to production; send it to the sandbox now.
    case retryOnSandbox
    /// 21008: a production receipt sent to the sandbox; send it to production now.
    case retryOnProduction
    /// Try again later. When `upstreamUnavailable`, Apple itself is down or throttling us: the
    /// whole fleet should pause, and the wait should not count against the job's attempts.
    case retryable(upstreamUnavailable: Bool)
    /// Try again later, as `retryable(upstreamUnavailable: true)`: such failures usually pass. But
    /// one that fails every call for the configured time (`halt-after-transport-failures`) is a
    /// misconfiguration, such as https to a plain HTTP port: then halt and alarm with `reason`.
    case unavailableUnlessPersistent(reason: String)
    /// The endpoint's rate limit is spent (HTTP 429): nobody calls it until `retryAfter` (Apple's,
    /// or a second when it did not say); the job waits without being charged an attempt, and other
    /// endpoints go on.
    case throttled(retryAfter: Duration)
    /// This receipt will never verify: record the subscription as invalid.
    case permanent(reason: String)
    /// The fleet is misconfigured (shared secret, endpoint, TLS): halt and alarm; blame no receipt.
    case configurationError(reason: String)
}

/// The one table from verifyReceipt outcomes to fleet actions.
public struct StatusPolicy: Sendable, Equatable {
    /// How many attempts may answer 21002 before the receipt counts as malformed. Apple uses 21002
    /// both for malformed receipt data and for passing faults of its own.
    public var malformedReceiptAttempts: Int

    public init(malformedReceiptAttempts: Int = 3) {
        self.malformedReceiptAttempts = malformedReceiptAttempts
    }

    /// The action for `outcome`, where `attempt` counts this job's attempts including this one (1…).
    public func action(for outcome: VerificationOutcome, attempt: Int) -> VerificationAction {
        switch outcome {
        case .status(0, _): .success
        case .status(21000, _):
            .configurationError(reason: "21000: the App Store could not read the request; check its body and method")
        case .status(21002, _) where attempt < malformedReceiptAttempts: .retryable(upstreamUnavailable: false)
        case .status(21002, _):
            .permanent(reason: "21002: the receipt data is malformed (still so on attempt \(attempt))")
        case .status(21003, _): .permanent(reason: "21003: the receipt could not be authenticated")
        case .status(21004, _):
            .configurationError(reason: "21004: the shared secret does not match the app's; fix the configured one")
        case .status(21005, _): .retryable(upstreamUnavailable: true)
        case .status(21006, _): .expiredButValid
        case .status(21007, _): .retryOnSandbox
        case .status(21008, _): .retryOnProduction
        case .status(21009, _): .retryable(upstreamUnavailable: false)
        case .status(21010, _): .permanent(reason: "21010: the user account cannot be found or was deleted")
        case .status(let code, isRetryable: false?) where (21100...21199).contains(code):
            .permanent(reason: "\(code): internal data access error that Apple marks not retryable")
        // is-retryable true, or absent: Apple only documents "do not retry" when it says so.
        case .status(21100...21199, _): .retryable(upstreamUnavailable: false)
        // An undocumented status (21001 is retired) is never grounds to invalidate a receipt.
        case .status: .retryable(upstreamUnavailable: false)

        case .unreadableBody(httpStatus: 429), .unreadableBody(httpStatus: 500...599):
            .retryable(upstreamUnavailable: true)
        // Authentication, routing and method errors concern the endpoint, never one receipt.
        case .unreadableBody(httpStatus: let code) where [401, 403, 404, 405, 407].contains(code):
            .configurationError(reason: "HTTP \(code) from the verifyReceipt endpoint; check its URL and any proxy")
        case .unreadableBody(httpStatus: let code) where (400...499).contains(code):
            .permanent(reason: "HTTP \(code): the App Store rejected this request")
        // A garbled answer with any other status: try again, without pausing the fleet.
        case .unreadableBody: .retryable(upstreamUnavailable: false)

        case .transportFailure(.invalidRequest):
            .configurationError(reason: "the verifyReceipt request could not be made; check the configured URLs")
        case .transportFailure(.tls):
            .configurationError(reason: "the App Store's certificate did not verify; check the CA bundle, the clock and any proxy")
        case .transportFailure(.tlsHandshake):
            .unavailableUnlessPersistent(
                reason: "every TLS handshake with the App Store fails; check that the URL's scheme matches the server, and any proxy")
        case .transportFailure(.protocolError):
            .unavailableUnlessPersistent(
                reason: "every answer from the App Store breaks HTTP; check that the URL names the App Store, and any proxy")
        case .transportFailure(.timeout), .transportFailure(.connectionRefused),
             .transportFailure(.connectionReset), .transportFailure(.nameResolution):
            .retryable(upstreamUnavailable: true)

        // The redirect to the other environment was not made now (it needs leave of its own).
        case .serverAPI(.notFound), .serverAPI(.unfinished): .retryable(upstreamUnavailable: false)
        // Nothing reached Apple, so the use case judges it without this table; retried, as here.
        case .notSent: .retryable(upstreamUnavailable: false)
        case .serverAPI(.notFoundAnywhere):
            .permanent(reason: "the App Store knows this transaction in neither environment")
        // Apple's Retry-After, within reason: a garbled header must not stop an endpoint for days.
        case .serverAPI(.rateLimited(let retryAfter)):
            .throttled(retryAfter: min(max(retryAfter ?? .seconds(1), .milliseconds(100)), .seconds(900)))
        case .serverAPI(.unauthorized):
            .configurationError(
                reason: "the App Store Server API refuses the key (HTTP 401); check the issuer id, the key id and the .p8 file")
        case .serverAPI(.failed(let status, _, retryable: true)): .retryable(upstreamUnavailable: status >= 500)
        case .serverAPI(.failed(let status, let code, retryable: false)):
            .permanent(reason: "HTTP \(status)\(code.map { " error \($0)" } ?? ""): the App Store rejected this request")
        case .serverAPI(.notConfigured):
            .configurationError(
                reason: "subscriptions use the App Store Server API, but this process has no key for it; set server-api-issuer-id, "
                    + "server-api-key-id, server-api-key-file and server-api-bundle-id, or move them back with "
                    + "`receiptfleet subscriptions set-backend verify-receipt`")
        case .serverAPI(.untrusted):
            .configurationError(
                reason: "a signed answer from the App Store did not verify to the trusted root or named another app; "
                    + "check the trusted root and the bundle id")
        }
    }
}
