import AppStore
import Foundation
import HTTPClient

/// How the client reads Apple's answers: error bodies, statuses and history pages, every signed
/// payload checked before it is kept.
extension ServerAPIClient {
    /// What an error answer means.
    func refusal(_ answer: HTTPResponse) -> (VerificationOutcome, String) {
        let error = ServerAPIErrorBody(body: answer.body)
        let named = "HTTP \(answer.status)" + (error.map { " error \($0.code)" } ?? "")
        let status: ServerAPIStatus? = switch (answer.status, error?.code) {
        case (404, ServerAPIErrorBody.transactionIDNotFound): .notFound
        case (429, _): .rateLimited(retryAfter: Self.retryAfter(answer.headers.values(for: "Retry-After").first, now: now()))
        case (401, _): .unauthorized
        case (_, let code?): .failed(httpStatus: answer.status, code: code, retryable: answer.status >= 500 || Self.retryableCodes.contains(code))
        // No error body: a proxy's or a load balancer's answer.
        default: answer.status >= 500 ? .failed(httpStatus: answer.status, code: nil, retryable: true) : nil
        }
        let problem = status == .unauthorized ? "\(named) for key \(tokens.key.keyID)" : named
        return (status.map(VerificationOutcome.serverAPI) ?? .unreadableBody(httpStatus: answer.status), problem)
    }

    /// Reads a statuses answer's verified payloads, or sets why they cannot be believed.
    func statuses(_ answer: HTTPResponse, into exchange: inout VerificationExchange) -> SignedAnswer? {
        reading(into: &exchange) {
            let statuses = try SubscriptionStatusesResponse(body: answer.body, httpStatus: answer.status)
            let now = self.now()
            var signed = SignedAnswer(environment: statuses.environment)
            signed.transactions = try statuses.lastTransactions.map { try verified($0.signedTransactionInfo, at: now) }
            signed.renewals = try statuses.lastTransactions.compactMap(\.signedRenewalInfo).map { try verified($0, at: now) }
            return signed
        }
    }

    /// Reads a history page's verified transactions into `signed`, or sets why they cannot be believed.
    func history(
        _ answer: HTTPResponse, into exchange: inout VerificationExchange, adding signed: inout SignedAnswer
    ) -> TransactionHistoryPage? {
        reading(into: &exchange) {
            let page = try TransactionHistoryPage(body: answer.body, httpStatus: answer.status)
            let now = self.now()
            signed.transactions += try page.signedTransactions.map { try verified($0, at: now) }
            return page
        }
    }

    /// What `read` reads from a 200 answer; a body that is not the answer it should be, or a
    /// payload that cannot be believed, sets the exchange's outcome and problem instead.
    private func reading<T>(into exchange: inout VerificationExchange, _ read: () throws -> T) -> T? {
        do {
            return try read()
        } catch let error as ResponseDecodingError {
            (exchange.outcome, exchange.problem) = (VerificationOutcome(error), error.description)
        } catch {
            (exchange.outcome, exchange.problem) = (.serverAPI(.untrusted), "\(error)")
        }
        return nil
    }

    /// The payload of `jws`, once its chain and signature hold.
    func verified(_ jws: String, at now: Date) throws -> Data {
        try signatures.payloadOnThisThread(of: jws, at: now)
    }

    /// Retry-After as Apple or a proxy writes it: seconds to wait, or a UNIX time in milliseconds.
    public static func retryAfter(_ value: String?, now: Date) -> Duration? {
        guard let value, let number = Int64(value.trimmingCharacters(in: .whitespaces)), number >= 0 else { return nil }
        guard number > 100_000_000_000 else { return .seconds(number) }
        let wait = Double(number) / 1000 - now.timeIntervalSince1970
        return .milliseconds(max(0, Int64(wait * 1000)))
    }
}
