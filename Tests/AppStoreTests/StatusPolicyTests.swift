import AppStore
import Testing

/// The status policy, row by row.
@Suite struct StatusPolicyTests {
    /// An expected action; reasons are checked for substance, not wording.
    enum Expected: Sendable, Equatable {
        case success, expiredButValid, retryOnSandbox, retryOnProduction
        case retryable(upstreamUnavailable: Bool)
        case throttled(Duration)
        case unavailableUnlessPersistent(mentioning: String)
        case permanent(mentioning: String)
        case configurationError(mentioning: String)
    }

    struct Row: Sendable, CustomTestStringConvertible {
        let outcome: VerificationOutcome
        var attempt = 1
        let expected: Expected
        var testDescription: String { "\(outcome) at attempt \(attempt)" }
    }

    static let rows: [Row] = [
        Row(outcome: .status(0, isRetryable: nil), expected: .success),
        Row(outcome: .status(21000, isRetryable: nil), expected: .configurationError(mentioning: "21000")),
        Row(outcome: .status(21001, isRetryable: nil), expected: .retryable(upstreamUnavailable: false)),
        Row(outcome: .status(21002, isRetryable: nil), attempt: 1, expected: .retryable(upstreamUnavailable: false)),
        Row(outcome: .status(21002, isRetryable: nil), attempt: 2, expected: .retryable(upstreamUnavailable: false)),
        Row(outcome: .status(21002, isRetryable: nil), attempt: 3, expected: .permanent(mentioning: "21002")),
        Row(outcome: .status(21002, isRetryable: nil), attempt: 9, expected: .permanent(mentioning: "21002")),
        Row(outcome: .status(21003, isRetryable: nil), expected: .permanent(mentioning: "21003")),
        Row(outcome: .status(21004, isRetryable: nil), expected: .configurationError(mentioning: "shared secret")),
        Row(outcome: .status(21005, isRetryable: nil), expected: .retryable(upstreamUnavailable: true)),
        Row(outcome: .status(21006, isRetryable: nil), expected: .expiredButValid),
        Row(outcome: .status(21007, isRetryable: nil), expected: .retryOnSandbox),
        Row(outcome: .status(21008, isRetryable: nil), expected: .retryOnProduction),
        Row(outcome: .status(21009, isRetryable: nil), expected: .retryable(upstreamUnavailable: false)),
        Row(outcome: .status(21010, isRetryable: nil), expected: .permanent(mentioning: "21010")),
        Row(outcome: .status(21100, isRetryable: true), expected: .retryable(upstreamUnavailable: false)),
        Row(outcome: .status(21150, isRetryable: false), expected: .permanent(mentioning: "21150")),
        Row(outcome: .status(21199, isRetryable: nil), expected: .retryable(upstreamUnavailable: false)),
        Row(outcome: .status(21199, isRetryable: false), expected: .permanent(mentioning: "21199")),
        Row(outcome: .status(21200, isRetryable: false), expected: .retryable(upstreamUnavailable: false)),
        Row(outcome: .status(0, isRetryable: false), expected: .success),
        Row(outcome: .unreadableBody(httpStatus: 429), expected: .retryable(upstreamUnavailable: true)),
        Row(outcome: .unreadableBody(httpStatus: 500), expected: .retryable(upstreamUnavailable: true)),
        Row(outcome: .unreadableBody(httpStatus: 503), expected: .retryable(upstreamUnavailable: true)),
        Row(outcome: .unreadableBody(httpStatus: 599), expected: .retryable(upstreamUnavailable: true)),
        Row(outcome: .unreadableBody(httpStatus: 400), expected: .permanent(mentioning: "HTTP 400")),
        Row(outcome: .unreadableBody(httpStatus: 413), expected: .permanent(mentioning: "HTTP 413")),
        Row(outcome: .unreadableBody(httpStatus: 401), expected: .configurationError(mentioning: "HTTP 401")),
        Row(outcome: .unreadableBody(httpStatus: 403), expected: .configurationError(mentioning: "HTTP 403")),
        Row(outcome: .unreadableBody(httpStatus: 404), expected: .configurationError(mentioning: "HTTP 404")),
        Row(outcome: .unreadableBody(httpStatus: 405), expected: .configurationError(mentioning: "HTTP 405")),
        Row(outcome: .unreadableBody(httpStatus: 407), expected: .configurationError(mentioning: "HTTP 407")),
        Row(outcome: .unreadableBody(httpStatus: 200), expected: .retryable(upstreamUnavailable: false)),
        Row(outcome: .unreadableBody(httpStatus: 302), expected: .retryable(upstreamUnavailable: false)),
        Row(outcome: .transportFailure(.timeout), expected: .retryable(upstreamUnavailable: true)),
        Row(outcome: .transportFailure(.connectionRefused), expected: .retryable(upstreamUnavailable: true)),
        Row(outcome: .transportFailure(.connectionReset), expected: .retryable(upstreamUnavailable: true)),
        Row(outcome: .transportFailure(.nameResolution), expected: .retryable(upstreamUnavailable: true)),
        // Usually passing (a reset handshake, a garbled HTTP/2 stream): retried like a 5xx. Only
        // when every call fails so for long is it the setup (https to a plain port).
        Row(outcome: .transportFailure(.tlsHandshake), expected: .unavailableUnlessPersistent(mentioning: "scheme")),
        Row(outcome: .transportFailure(.protocolError), expected: .unavailableUnlessPersistent(mentioning: "HTTP")),
        Row(outcome: .transportFailure(.tls), expected: .configurationError(mentioning: "certificate")),
        Row(outcome: .transportFailure(.invalidRequest), expected: .configurationError(mentioning: "URL")),
        // The App Store Server API's answers.
        Row(outcome: .serverAPI(.notFound), expected: .retryable(upstreamUnavailable: false)),
        Row(outcome: .serverAPI(.notFoundAnywhere), expected: .permanent(mentioning: "neither environment")),
        // A 429 spends its endpoint's budget for Retry-After (a second when Apple did not say; at
        // most a quarter of an hour, whatever a header says).
        Row(outcome: .serverAPI(.rateLimited(retryAfter: .seconds(30))), expected: .throttled(.seconds(30))),
        Row(outcome: .serverAPI(.rateLimited(retryAfter: nil)), expected: .throttled(.seconds(1))),
        Row(outcome: .serverAPI(.rateLimited(retryAfter: .seconds(86_400 * 30))), expected: .throttled(.seconds(900))),
        Row(outcome: .serverAPI(.unauthorized), expected: .configurationError(mentioning: "key")),
        Row(outcome: .serverAPI(.failed(httpStatus: 500, code: 5_000_001, retryable: true)),
            expected: .retryable(upstreamUnavailable: true)),
        Row(outcome: .serverAPI(.failed(httpStatus: 404, code: 4_040_006, retryable: true)),
            expected: .retryable(upstreamUnavailable: false)),
        Row(outcome: .serverAPI(.failed(httpStatus: 400, code: 4_000_006, retryable: false)),
            expected: .permanent(mentioning: "4000006")),
        Row(outcome: .serverAPI(.untrusted), expected: .configurationError(mentioning: "trusted root")),
        Row(outcome: .serverAPI(.notConfigured), expected: .configurationError(mentioning: "server-api-key-file")),
    ]

    @Test(arguments: rows)
    func row(_ row: Row) {
        let action = StatusPolicy().action(for: row.outcome, attempt: row.attempt)
        switch (row.expected, action) {
        case (.permanent(let word), .permanent(let reason)), (.configurationError(let word), .configurationError(let reason)),
             (.unavailableUnlessPersistent(let word), .unavailableUnlessPersistent(let reason)):
            #expect(reason.contains(word), "reason: \(reason)")
        case (.success, .success), (.expiredButValid, .expiredButValid), (.retryOnSandbox, .retryOnSandbox),
             (.retryOnProduction, .retryOnProduction):
            break
        case (.retryable(let expected), .retryable(let actual)):
            #expect(expected == actual)
        case (.throttled(let expected), .throttled(let actual)):
            #expect(expected == actual)
        default:
            Issue.record("expected \(row.expected), got \(action)")
        }
    }

    @Test func everyTransportFailureHasARow() {
        let covered = Set(Self.rows.compactMap { row -> TransportFailure? in
            if case .transportFailure(let failure) = row.outcome { failure } else { nil }
        })
        #expect(covered == Set(TransportFailure.allCases))
    }

    @Test func malformedReceiptAttemptsIsAParameter() {
        let impatient = StatusPolicy(malformedReceiptAttempts: 1)
        if case .permanent = impatient.action(for: .status(21002, isRetryable: nil), attempt: 1) {} else {
            Issue.record("with one attempt allowed, the first 21002 should be permanent")
        }
        let patient = StatusPolicy(malformedReceiptAttempts: 5)
        #expect(patient.action(for: .status(21002, isRetryable: nil), attempt: 4) == .retryable(upstreamUnavailable: false))
        if case .permanent = patient.action(for: .status(21002, isRetryable: nil), attempt: 5) {} else {
            Issue.record("the fifth 21002 should be permanent")
        }
    }

    @Test func outcomesComeFromResponsesAndDecodingErrors() throws {
        let response = try VerifyReceiptResponse(body: Array(#"{"status":"21105","is_retryable":"false"}"#.utf8), httpStatus: 200)
        #expect(VerificationOutcome(response) == .status(21105, isRetryable: false))
        do {
            _ = try VerifyReceiptResponse(body: Array("<html>Bad Gateway</html>".utf8), httpStatus: 502)
            Issue.record("an HTML page is not a response")
        } catch {
            #expect(VerificationOutcome(error) == .unreadableBody(httpStatus: 502))
            #expect(StatusPolicy().action(for: VerificationOutcome(error), attempt: 1) == .retryable(upstreamUnavailable: true))
        }
    }
}
