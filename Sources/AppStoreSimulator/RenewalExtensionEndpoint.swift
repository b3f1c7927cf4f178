import Foundation

/// Apple's renewal-date extensions, as the Server API answers them: Extend a Subscription Renewal
/// Date (`PUT /inApps/v1/subscriptions/extend/{originalTransactionId}`), Extend Subscription Renewal
/// Dates for All Active Subscribers (`POST /inApps/v1/subscriptions/extend/mass`) and Get Status of
/// Subscription Renewal Date Extensions (`GET /inApps/v1/subscriptions/extend/mass/{productId}/{requestIdentifier}`).
/// Apple's rules hold: 1 to 90 days, a known reason, a request identifier of at most 128
/// characters, only a paid, active period (no free offer, billing retry, grace or expiry), not
/// Family Sharing, at most two extensions within 365 days; a request identifier heard again is
/// answered as the first time and changes nothing.
enum RenewalExtensionEndpoint {
    /// The fields every extension request carries, checked as Apple checks them.
    private struct Ask {
        let days: Int
        let requestIdentifier: String
        let fields: [String: Any]

        static func read(_ body: [UInt8]) -> Result<Ask, ServerAPIEndpoint.AnswerError> {
            guard let fields = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] else {
                return .failure(.init(ServerAPIEndpoint.error(400, 4_000_000, "Invalid request.")))
            }
            guard let days = fields["extendByDays"] as? Int, (1...90).contains(days) else {
                return .failure(.init(ServerAPIEndpoint.error(400, 4_000_009, "Invalid extend by days value.")))
            }
            guard let reason = fields["extendReasonCode"] as? Int, (0...3).contains(reason) else {
                return .failure(.init(ServerAPIEndpoint.error(400, 4_000_010, "Invalid extend reason code.")))
            }
            guard let identifier = fields["requestIdentifier"] as? String, RenewalExtensionEndpoint.accepts(identifier) else {
                return .failure(.init(RenewalExtensionEndpoint.invalidRequestIdentifier))
            }
            return .success(Ask(days: days, requestIdentifier: identifier, fields: fields))
        }
    }

    static let invalidRequestIdentifier = ServerAPIEndpoint.error(400, 4_000_011, "Invalid request identifier.")
    static let invalidProductID = ServerAPIEndpoint.error(400, 4_000_023, "Invalid product id.")
    static let notFound = ServerAPIEndpoint.error(404, 4_040_005, "Original transaction id not found.")

    static func accepts(_ requestIdentifier: String) -> Bool { !requestIdentifier.isEmpty && requestIdentifier.count <= 128 }

    /// Extend a Subscription Renewal Date for `app`'s subscription `originalTransactionID`.
    static func extend(
        app: Int, originalTransactionID: String, body: [UInt8], endpoint: SimulatedEnvironment, now: Int64,
        setup: ServerAPISimulation
    ) -> ServerAPIEndpoint.Answer {
        guard let id = UInt64(originalTransactionID) else {
            return ServerAPIEndpoint.error(400, 4_000_008, "Invalid original transaction id.")
        }
        let ask: Ask
        switch Ask.read(body) {
        case .failure(let failure): return failure.answer
        case .success(let read): ask = read
        }
        // Only an original transaction id of a purchase made in this environment names a subscription.
        guard let position = IdentifierScheme.position(ofTransactionID: id, seed: setup.seeds[app]), position.sequence == 0 else {
            return notFound
        }
        let receipt = SimulatedReceipt(token: ReceiptToken(
            seed: setup.seeds[app], index: position.index, environment: LifecycleKind.at(index: position.index).environment,
            anchorMs: setup.anchorMs, app: app))
        guard receipt.token.environment == endpoint, receipt.fixedFailureStatus == nil,
              let script = receipt.scripts.first(where: { $0.chain == position.chain })
        else { return notFound }
        let granted = setup.extensions.granted(app: app, originalTransactionID: originalTransactionID)
        if let retry = granted.first(where: { $0.requestIdentifier == ask.requestIdentifier }) {
            return ServerAPIEndpoint.Answer(httpStatus: 200, body: retry.answer)
        }
        switch grant(ask.days, to: script, of: receipt.extended(by: setup.extensions), granted: granted, now: now) {
        case .failure(let refusal):
            return refusal.answer
        case .success(let (moved, snapshot)):
            var json = JSONWriter(capacity: 192)
            json.beginObject()
            json.string("originalTransactionId", originalTransactionID)
            json.string("webOrderLineItemId", String(snapshot.transactions.last!.webOrderLineItemID))
            json.bool("success", true)
            json.number("effectiveDate", snapshot.expiresMs)
            json.endObject()
            let answer = json.finish()
            setup.extensions.grant(
                .init(requestIdentifier: ask.requestIdentifier, atMs: now, byMs: moved, answer: answer),
                app: app, originalTransactionID: originalTransactionID)
            return ServerAPIEndpoint.Answer(httpStatus: 200, body: answer)
        }
    }

    /// Whether `script`'s subscription (on `receipt`, with the extensions `granted` so far) may be
    /// extended by `days` now, and if so how far (ms) its period's end moves and what Apple then
    /// knows of it; else Apple's refusal.
    private static func grant(
        _ days: Int, to script: ChainScript, of receipt: SimulatedReceipt, granted: [GrantedExtensions.Grant], now: Int64
    ) -> Result<(Int64, ChainSnapshot), ServerAPIEndpoint.AnswerError> {
        let time = Durations.of(receipt.token.environment)
        guard let snapshot = receipt.snapshot(chain: script.chain, at: now) else { return .failure(.init(notFound)) }
        guard snapshot.status == .active, !snapshot.transactions.last!.isTrial else {
            return .failure(.init(ServerAPIEndpoint.error(403, 4_030_004, "Subscription extension ineligible.")))
        }
        guard script.ownership != .familyShared else {
            return .failure(.init(ServerAPIEndpoint.error(403, 4_030_007, "Family shared subscription extension ineligible.")))
        }
        guard granted.filter({ $0.atMs > now - time.days(365) }).count < 2 else {
            return .failure(.init(ServerAPIEndpoint.error(403, 4_030_005, "Subscription max extension.")))
        }
        let moved = time.days(days)
        var after = receipt
        after.extend(chain: script.chain, at: now, by: moved)
        return .success((moved, after.snapshot(chain: script.chain, at: now)!))
    }

    /// Extend Subscription Renewal Dates for All Active Subscribers: every subscription of
    /// `app`'s simulated fleet in this environment whose period of the product runs now is
    /// extended, or counted failed when Apple's rules refuse it.
    static func extendAll(app: Int, body: [UInt8], endpoint: SimulatedEnvironment, now: Int64, setup: ServerAPISimulation)
        -> ServerAPIEndpoint.Answer
    {
        let ask: Ask
        switch Ask.read(body) {
        case .failure(let failure): return failure.answer
        case .success(let read): ask = read
        }
        guard let productID = ask.fields["productId"] as? String, Catalog.productIDs.contains(productID) else { return invalidProductID }
        var json = JSONWriter(capacity: 192)
        json.beginObject()
        json.string("requestIdentifier", ask.requestIdentifier)
        json.endObject()
        let answer = ServerAPIEndpoint.Answer(httpStatus: 200, body: json.finish())
        guard !setup.extensions.knowsMassRequest(app: app, productID: productID, requestIdentifier: ask.requestIdentifier) else {
            return answer  // a retry: Apple has the request already
        }
        var (succeeded, failed) = (0, 0)
        let count = setup.subscriptions.indices.contains(app) ? setup.subscriptions[app] : 0
        for receipt in SimulatedReceipt.fleet(count: count, seed: setup.seeds[app], anchorMs: setup.anchorMs, app: app)
        where receipt.token.environment == endpoint && receipt.fixedFailureStatus == nil {
            let extended = receipt.extended(by: setup.extensions)
            for script in receipt.scripts {
                guard let snapshot = extended.snapshot(chain: script.chain, at: now), snapshot.status == .active,
                      snapshot.renewal.productID == productID
                else { continue }
                let id = String(receipt.identifiers.transactionID(chain: script.chain, sequence: 0))
                let granted = setup.extensions.granted(app: app, originalTransactionID: id)
                switch grant(ask.days, to: script, of: extended, granted: granted, now: now) {
                case .failure:
                    failed += 1
                case .success(let (moved, _)):
                    succeeded += 1
                    setup.extensions.grant(
                        .init(requestIdentifier: ask.requestIdentifier, atMs: now, byMs: moved, answer: []), app: app, originalTransactionID: id)
                }
            }
        }
        setup.extensions.recordMassRequest(
            .init(succeeded: succeeded, failed: failed, completeMs: now), app: app, productID: productID, requestIdentifier: ask.requestIdentifier)
        return answer
    }

    /// Get Status of Subscription Renewal Date Extensions.
    static func status(app: Int, productID: String, requestIdentifier: String, setup: ServerAPISimulation) -> ServerAPIEndpoint.Answer {
        guard accepts(requestIdentifier) else { return invalidRequestIdentifier }
        guard Catalog.productIDs.contains(productID) else { return invalidProductID }
        guard let request = setup.extensions.readMassRequest(app: app, productID: productID, requestIdentifier: requestIdentifier) else {
            return ServerAPIEndpoint.error(404, 4_040_009, "Status request not found.")
        }
        var json = JSONWriter(capacity: 192)
        json.beginObject()
        json.string("requestIdentifier", requestIdentifier)
        json.bool("complete", request.statusReads > 1)
        if request.statusReads > 1 {
            json.number("completeDate", request.completeMs)
            json.number("succeededCount", Int64(request.succeeded))
            json.number("failedCount", Int64(request.failed))
        }
        json.endObject()
        return ServerAPIEndpoint.Answer(httpStatus: 200, body: json.finish())
    }
}
