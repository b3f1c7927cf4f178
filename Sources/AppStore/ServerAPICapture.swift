import Foundation

/// App Store Server API answers about one customer as support saves them for `receiptfleet
/// inspect`: one JSON object holding Apple's bodies as sent,
/// `{"statuses": <Get All Subscription Statuses>, "history": [<Get Transaction History page>, …]}`,
/// the history optional. Read by the client's own readers, and believed only once every signed
/// payload verifies against the trusted root and names the app, as the fleet believes them.
public struct ServerAPICapture: Sendable {
    public let statuses: SubscriptionStatusesResponse
    public let history: [TransactionHistoryPage]

    /// Whether `body` is such a capture rather than a verifyReceipt response: it has `statuses`.
    public static func holds(_ body: [UInt8]) -> Bool {
        (try? JSONValue.parse(body))?.members?["statuses"]?.members != nil
    }

    public init(body: [UInt8]) throws(ResponseDecodingError) {
        let fields = try JSONValue.object(body, httpStatus: 200)
        guard let statuses = fields["statuses"]?.members else { throw ResponseDecodingError(.noStatus, httpStatus: 200, body: body) }
        self.statuses = SubscriptionStatusesResponse(fields: statuses)
        history = (fields["history"]?.objects ?? []).map(TransactionHistoryPage.init(fields:))
    }

    /// The answers read as the analysis reads them (verifyReceipt's model), once every signed
    /// payload verified at `time` with `verifier` and named `bundleID` (default: the app the
    /// statuses answer names).
    public func response(verifiedBy verifier: SignedPayloadVerifier, bundleID: String?, at time: Date) async throws -> VerifyReceiptResponse {
        guard let bundleID = bundleID ?? statuses.bundleID else {
            throw SignedPayloadError.unreadable("the statuses answer names no bundleId: name the app with --bundle-id")
        }
        var transactions: [Data] = []
        var renewals: [Data] = []
        for entry in statuses.lastTransactions {
            transactions.append(try await verifier.payload(of: entry.signedTransactionInfo, at: time))
            if let renewal = entry.signedRenewalInfo { renewals.append(try await verifier.payload(of: renewal, at: time)) }
        }
        for jws in history.flatMap(\.signedTransactions) { transactions.append(try await verifier.payload(of: jws, at: time)) }
        return try VerifyReceiptResponse(
            signedTransactions: transactions, renewals: renewals, environment: statuses.environment, bundleID: bundleID,
            showsEveryRefund: !history.isEmpty)
    }
}

extension ServerAPICapture {
    /// What `receiptfleet inspect` reads in `body`: the Server API's answers, once every signed
    /// payload verified now (is it Apple's signature today?) against the root in `rootFile` (DER or
    /// PEM; default: Apple Root CA - G3) and named `bundleID`; else a verifyReceipt response.
    /// Throws `ResponseDecodingError` for a body that cannot be read, `UntrustedAnswer` for answers
    /// that do not verify.
    public static func response(in body: [UInt8], rootFile: String?, bundleID: String?) async throws -> VerifyReceiptResponse {
        guard holds(body) else { return try VerifyReceiptResponse(body: body, httpStatus: 200) }
        let capture = try ServerAPICapture(body: body)
        let roots = try rootFile.map { try AppleRootCertificate.certificates(inFile: $0) } ?? [AppleRootCertificate.load()]
        do {
            return try await capture.response(verifiedBy: SignedPayloadVerifier(trustedRoots: roots), bundleID: bundleID, at: Date())
        } catch {
            throw UntrustedAnswer(description: "A signed payload cannot be believed: \(error). The answers are not Apple's for "
                + "this app, or --root (\(rootFile ?? "Apple Root CA - G3")) or --bundle-id names another.")
        }
    }
}

/// Server API answers whose signed payloads do not verify: nothing in them is shown.
public struct UntrustedAnswer: Error, CustomStringConvertible {
    public let description: String
}
