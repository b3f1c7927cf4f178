import AppStore
import FleetConfiguration
import Foundation
@testable import Fleet
import JobQueue
import Lanes
@testable import Ledger
import Logging
import Testing
@testable import VerificationUseCase

/// `SubscriptionVerification`'s decision table, with in-memory fakes for its three ports: what
/// each of Apple's answers (and the fleet's admissions) makes of a job — verified, retried,
/// postponed, paused, halted, buried — and what the fleet and the ledger hear of it. The end-to-end
/// suites run the same use case against the real servers.
@Suite struct DecisionTableTests {
    /// The gate: admits, and lets admitted calls leave, as scripted (then grants), and records what it is told.
    final class FakeGate: AppleGate {
        var admissions: [Admission] = []
        var departures: [Admission] = []
        var unanswered = RecurringFailureVerdict.counted(pause: .zero)
        var confirmsConfigurationError = false
        private(set) var heard: [String] = []

        private(set) var endpoints: [AppleEndpoint] = []
        private(set) var apps: [String?] = []

        func admit(upcoming: Int, to endpoint: AppleEndpoint, forApp app: String?) throws -> Admission {
            endpoints.append(endpoint)
            apps.append(app)
            return admissions.isEmpty ? .granted(slots: [.zero]) : admissions.removeFirst()
        }
        func departing(to endpoint: AppleEndpoint, forApp app: String?) throws -> Admission {
            departures.isEmpty ? .granted(slots: [.zero]) : departures.removeFirst()
        }
        func called(_ answer: LastAnswer, by endpoint: AppleEndpoint, forApp app: String?, taking duration: Duration) {
            heard.append("answer \(answer)")
        }
        func reportRecovered() throws { heard.append("recovered") }
        func reportUnanswered(_ action: VerificationAction, _ exchange: VerificationExchange) throws -> RecurringFailureVerdict {
            heard.append("unanswered")
            return unanswered
        }
        func reportThrottled(_ endpoint: AppleEndpoint, for wait: Duration) throws -> Duration {
            heard.append("throttled \(endpoint.rawValue)")
            return wait
        }
        func reportConfigurationError(
            subscriptionID: Int64, app: String, reason: String, needed: Int, backend: VerificationBackend
        ) throws -> Bool {
            heard.append("configuration error" + (backend == .serverAPI ? " server_api" : " of \(app)"))
            return confirmsConfigurationError
        }
        func halt(reason: String, backend: VerificationBackend) throws { heard.append("halt" + (backend == .serverAPI ? " server_api" : "")) }
    }

    /// Apple: answers every call with `outcome` (and `response` when readable).
    final class FakeVerifier: AppleVerifier {
        let outcome: VerificationOutcome
        let response: VerifyReceiptResponse?
        private(set) var calls = 0

        init(_ outcome: VerificationOutcome, response: VerifyReceiptResponse? = nil) {
            self.outcome = outcome
            self.response = response
        }

        private(set) var subjects: [VerificationSubject] = []
        private(set) var apps: [String?] = []

        /// Asks the gate for one further call to this endpoint before answering, when set.
        var furtherCall: AppleEndpoint?

        func verify(
            _ subject: VerificationSubject, ofApp app: String?, startingIn environment: AppStoreEnvironment,
            leave: (AppleEndpoint) -> Bool
        ) -> Verification {
            subjects.append(subject)
            apps.append(app)
            guard leave(subject.firstEndpoint) else {
                return Verification(exchanges: [.notSent(to: subject.firstEndpoint, in: environment)], response: nil)
            }
            calls += 1
            let allowed = furtherCall.map(leave) ?? true
            return Verification(
                exchanges: [VerificationExchange(
                    environment: environment, outcome: allowed ? outcome : .serverAPI(.unfinished), httpStatus: 200,
                    latency: .milliseconds(5), endpoint: subject.firstEndpoint)],
                response: response)
        }
    }

    /// The ledger: keeps what it is given; the first write of each batch may lose the compare-and-set.
    final class FakeStore: VerificationStore {
        var firstWriteIsStale = false
        private(set) var written: [VerificationWrite] = []
        private(set) var rewritten: [VerificationWrite] = []

        private(set) var purchases: [PurchaseWrite] = []

        func write(
            _ writes: [VerificationWrite], purchases: PurchaseWrite?, nextNightlyRun: Date
        ) throws -> (outcomes: [WriteOutcome], purchases: RecordedPurchases?) {
            written += writes
            self.purchases += purchases.map { [$0] } ?? []
            return (writes.indices.map { $0 == 0 && firstWriteIsStale ? .stale : .written(version: 1) },
                    purchases.map { _ in RecordedPurchases(records: [], created: []) })
        }
        func rewrite(
            _ write: VerificationWrite, nextNightlyRun: Date, reanalysing: (SubscriptionState?) throws -> Analysis
        ) throws -> WriteOutcome {
            rewritten.append(write)
            _ = try reanalysing(nil)
            return .written(version: 2)
        }

        private(set) var judgements: [ClaimJudgement] = []

        func judgeClaims(of subscriptionID: Int64, _ judgement: ClaimJudgement) throws -> String? {
            judgements.append(judgement)
            if case .givenBack = judgement { claimAttemptsTaken -= 1 }
            return nil
        }

        /// The calls the queued claim has cost so far, as the ledger counts them.
        var claimAttemptsTaken = 0

        func takeClaimAttempt(of subscriptionID: Int64, receiptSHA256: String, seen: Int, limit: Int) throws -> Int? {
            guard claimAttemptsTaken == seen, claimAttemptsTaken < limit else { return nil }
            claimAttemptsTaken += 1
            return claimAttemptsTaken
        }
    }

    static let subscription = LoadedSubscription(
        id: 7, originalTransactionID: "1000000000000007", app: "default", accountID: nil, environment: .production, backend: nil,
        receipt: ReceiptData(base64: "cmVjZWlwdA=="), state: nil, version: 0, lastVerifiedAt: nil, nextCheckAt: nil)

    /// Apple's answer for that subscription: one monthly period, renewing, bought a week ago.
    static func activeResponse(originalTransactionID otid: String = "1000000000000007") throws -> VerifyReceiptResponse {
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let (bought, expires) = (now - 7 * 86_400_000, now + 23 * 86_400_000)
        let entry = """
            {"product_id":"monthly","transaction_id":"2000000000000007","original_transaction_id":"\(otid)",
             "purchase_date_ms":"\(bought)","original_purchase_date_ms":"\(bought)","expires_date_ms":"\(expires)",
             "web_order_line_item_id":"3000000000000007","is_trial_period":"false","is_in_intro_offer_period":"false",
             "in_app_ownership_type":"PURCHASED"}
            """
        let body = """
            {"status":0,"environment":"Production","receipt":{"bundle_id":"com.example.app","request_date_ms":"\(now)",
             "in_app":[\(entry)]},"latest_receipt_info":[\(entry)],
             "pending_renewal_info":[{"auto_renew_product_id":"monthly","product_id":"monthly",
             "original_transaction_id":"\(otid)","auto_renew_status":"1"}]}
            """
        return try VerifyReceiptResponse(body: Array(body.utf8), httpStatus: 200)
    }

    /// One job through the use case, as a worker runs it: decide, write, and the settlement.
    static func run(
        _ verifier: FakeVerifier, gate: FakeGate = FakeGate(), store: FakeStore = FakeStore(),
        subscription: LoadedSubscription? = subscription, attempt: Int = 0
    ) throws -> (settlement: String, gate: FakeGate, store: FakeStore) {
        let verification = try useCase(verifier, gate: gate, store: store)
        var job = Job(subscriptionID: 7, runID: "t", reason: .nightly, enqueuedAt: Int64(Date().timeIntervalSince1970 * 1000))
        job.attempt = attempt
        let settlement = try verification.write([verification.decide(job, subscription)])[0]
        return (Self.kind(settlement), gate, store)
    }

    static func useCase(
        _ verifier: FakeVerifier, gate: FakeGate, store: FakeStore, defaultBackend: VerificationBackend = .verifyReceipt
    ) throws -> SubscriptionVerification {
        var settings = try FleetSettings.forTest(
            redisURL: "redis://unused", postgresURL: "postgresql://unused", keyPrefix: "{t}",
            endpoints: AppStoreEndpoints(production: "http://unused/p", sandbox: "http://unused/s"), sharedSecret: nil,
            rateLimit: try RateLimit(perSecond: 10, burst: 1))
        settings.defaultBackend = defaultBackend
        return SubscriptionVerification(
            gate: gate, verifier: verifier, store: store, policy: settings, metrics: FleetMetrics(),
            clock: SystemClock(), logger: Logger(label: "decision-table") { _ in SwiftLogNoOpLogHandler() })
    }

    /// A receipt the ledger does not know yet, asked about as a registration asks: its last chance.
    static func register(_ verifier: FakeVerifier, gate: FakeGate = FakeGate(), store: FakeStore = FakeStore()) throws
        -> (verdict: Verdict, verification: SubscriptionVerification, answer: Answer)
    {
        let verification = try useCase(verifier, gate: gate, store: store)
        let answer = try verification.ask(
            about: .receipt(ReceiptData(base64: "cmVjZWlwdA==")), ofApp: nil, startingIn: .production, attempt: StatusPolicy().malformedReceiptAttempts,
            probing: false, subscriptionID: nil)
        return (answer.verdict, verification, answer)
    }

    /// A settlement's kind: "ack verified", "ack permanent_failure", "postpone", "retry", "bury".
    static func kind(_ settlement: Settlement) -> String {
        switch settlement {
        case .ack(let outcome): "ack \(outcome.rawValue)"
        case .postpone: "postpone"
        case .retry: "retry"
        case .bury: "bury"
        }
    }

    @Test func anAnswerAboutTheReceiptIsAnalysedWrittenAndAcked() throws {
        let (settlement, gate, store) = try Self.run(FakeVerifier(.status(0, isRetryable: nil), response: Self.activeResponse()))
        #expect(settlement == "ack verified")
        #expect(store.written.count == 1 && store.written[0].change?.analysis.state.status == .active)
        #expect(gate.heard == ["answer verdict"])
    }

    @Test func aWriteThatLostTheRaceIsAnalysedAgainOnTopOfTheNewerState() throws {
        let store = FakeStore()
        store.firstWriteIsStale = true
        let (settlement, _, _) = try Self.run(
            FakeVerifier(.status(0, isRetryable: nil), response: Self.activeResponse()), store: store)
        #expect(settlement == "ack verified")
        #expect(store.rewritten.count == 1)
    }

    @Test func aStrayUnavailableAnswerRetriesTheJobAlone() throws {
        let (settlement, gate, store) = try Self.run(FakeVerifier(.status(21005, isRetryable: nil)))
        #expect(settlement == "retry")
        #expect(gate.heard == ["answer none", "unanswered"])
        #expect(store.written.map(\.attempt.outcome) == [.retryable], "the attempt is logged, the state untouched")
        #expect(store.written.allSatisfy { $0.change == nil })
    }

    @Test func aStreakOfUnavailableAnswersPausesAndPostponesWithoutChargingAnAttempt() throws {
        let gate = FakeGate()
        gate.unanswered = .counted(pause: .seconds(2))
        let (settlement, _, store) = try Self.run(FakeVerifier(.unreadableBody(httpStatus: 503)), gate: gate)
        #expect(settlement == "postpone")
        #expect(store.written.map(\.attempt.outcome) == [.retryable])
    }

    @Test func failingForTooLongHaltsTheFleet() throws {
        let gate = FakeGate()
        gate.unanswered = .halted(reason: "for 600 s, TLS handshake")
        let (settlement, _, store) = try Self.run(FakeVerifier(.transportFailure(.tlsHandshake)), gate: gate)
        #expect(settlement == "postpone")
        #expect(store.written.isEmpty)
    }

    @Test func aLoneConfigurationErrorIsBuriedAndSeveralHalt() throws {
        let journal = LoadedSubscription(
            id: 8, originalTransactionID: "1000000000000008", app: "journal", accountID: nil, environment: .production, backend: nil,
            receipt: ReceiptData(base64: "cmVjZWlwdA=="), state: nil, version: 0, lastVerifiedAt: nil, nextCheckAt: nil)
        let verifier = FakeVerifier(.status(21004, isRetryable: nil))
        let lone = try Self.run(verifier, subscription: journal)
        #expect(lone.settlement == "bury")
        #expect(lone.gate.heard == ["answer configurationError", "configuration error of journal"], "counted toward its app's halt")
        #expect(lone.gate.apps == ["journal"] && verifier.apps == ["journal"], "admitted, and asked with the secret, as its app's")
        #expect(lone.store.written.isEmpty, "a wrong secret never touches a subscription")

        let gate = FakeGate()
        gate.confirmsConfigurationError = true
        let confirmed = try Self.run(FakeVerifier(.status(21004, isRetryable: nil)), gate: gate)
        #expect(confirmed.settlement == "postpone")
        #expect(confirmed.store.written.isEmpty)
    }

    @Test func aCertificateThatDoesNotVerifyHaltsAtOnce() throws {
        let (settlement, gate, store) = try Self.run(FakeVerifier(.transportFailure(.tls)))
        #expect(settlement == "postpone")
        #expect(gate.heard.contains("halt"))
        #expect(store.written.isEmpty)
    }

    @Test func aReceiptAppleRefusesForGoodIsAPermanentFailure() throws {
        let (settlement, _, store) = try Self.run(FakeVerifier(.status(21010, isRetryable: nil)))
        #expect(settlement == "ack permanent_failure")
        #expect(store.written.map(\.attempt.outcome) == [.permanentFailure])
    }

    @Test func aPausedOrHaltedFleetCallsNobodyAndPostpones() throws {
        for admission in [Admission.paused(.seconds(2)), .halted(reason: "maintenance"), .appHalted(reason: "21004")] {
            let gate = FakeGate()
            gate.admissions = [admission]
            let verifier = FakeVerifier(.status(0, isRetryable: nil))
            let (settlement, _, store) = try Self.run(verifier, gate: gate)
            #expect(settlement == "postpone")
            #expect(verifier.calls == 0)
            #expect(store.written.isEmpty)
        }
    }

    @Test func aProbeThatGetsAnAnswerEndsThePause() throws {
        let gate = FakeGate()
        gate.admissions = [.probe]
        let (settlement, _, _) = try Self.run(FakeVerifier(.status(21010, isRetryable: nil)), gate: gate)
        #expect(settlement == "ack permanent_failure")
        #expect(gate.heard.contains("recovered"))

        let failing = FakeGate()
        failing.admissions = [.probe]
        _ = try Self.run(FakeVerifier(.status(21005, isRetryable: nil)), gate: failing)
        #expect(!failing.heard.contains("recovered"), "Apple still unavailable: the pause goes on")
    }

    @Test func nothingToVerifyIsSkippedOrBuried() throws {
        let verifier = FakeVerifier(.status(0, isRetryable: nil))
        #expect(try Self.run(verifier, subscription: nil).settlement == "ack skipped")
        var withoutReceipt = Self.subscription
        withoutReceipt.receipt = nil
        #expect(try Self.run(verifier, subscription: withoutReceipt).settlement == "bury")
        #expect(verifier.calls == 0)
    }

    /// A registration's receipt may be another app's: its configuration error is one client's
    /// answer, counted toward no halt, whether Apple said 21004 or the TLS check failed.
    @Test func aRegistrationsConfigurationErrorHaltsNothing() throws {
        for outcome in [VerificationOutcome.status(21004, isRetryable: nil), .transportFailure(.tls)] {
            let gate = FakeGate()
            guard case .misconfigured = try Self.register(FakeVerifier(outcome), gate: gate).verdict else {
                Issue.record("\(outcome): not misconfigured")
                continue
            }
            #expect(gate.heard == ["answer configurationError"], "\(outcome)")
        }
    }

    /// A person is waiting: 21002 (the receipt could not be read) is final, not worth a retry.
    @Test func aRegistrationsUnreadableReceiptIsRejectedAtOnce() throws {
        guard case .rejected = try Self.register(FakeVerifier(.status(21002, isRetryable: nil))).verdict else {
            Issue.record("21002 was not final for a registration")
            return
        }
    }

    /// Every subscription on a registered receipt gets the verified answer in one write; one that
    /// another writer changed meanwhile is analysed again on top of it.
    @Test func aRegisteredReceiptIsRecordedForEachOfItsSubscriptions() throws {
        let store = FakeStore()
        store.firstWriteIsStale = true
        let (verdict, verification, answer) = try Self.register(
            FakeVerifier(.status(0, isRetryable: nil), response: try Self.activeResponse()), store: store)
        guard case .verified(let response) = verdict else {
            Issue.record("not verified: \(verdict)")
            return
        }
        var other = Self.subscription
        other.id = 8
        let found = OneTimePurchases(response, nonRenewingProductIDs: [])
        _ = try verification.record(
            response, answer: answer, for: [Self.subscription, other],
            purchases: PurchaseWrite(app: "default", found: found, announcingPurchasesAfter: nil, accountID: nil),
            runID: "registration", announcingPurchasesWithin: 3_600)
        #expect(store.written.map(\.subscriptionID) == [7, 8])
        #expect(store.purchases.count == 1, "the receipt's one-time purchases are written with its subscriptions' results")
        #expect(store.written.map(\.attempt.outcome) == [.verified, .verified])
        #expect(store.written.map(\.attempt.runID) == ["registration", "registration"])
        #expect(store.rewritten.map(\.subscriptionID) == [7])
    }

    /// A subscription on the Server API, asked about by its original transaction.
    static var onServerAPI: LoadedSubscription {
        var moved = subscription
        moved.backend = .serverAPI
        return moved
    }

    /// The Server API refusing the key concerns every call, not one subscription: the Server API
    /// halts at once, and only it (verifyReceipt goes on).
    @Test func aServerAPIKeyAppleRefusesHaltsTheServerAPIAtOnce() throws {
        let (settlement, gate, store) = try Self.run(FakeVerifier(.serverAPI(.unauthorized)), subscription: Self.onServerAPI)
        #expect(settlement == "postpone")
        #expect(gate.heard.contains("halt server_api") && !gate.heard.contains("halt"))
        #expect(!gate.heard.contains { $0.hasPrefix("configuration error") })
        #expect(store.written.isEmpty)
    }

    /// A signed answer that does not verify may be one subscription's (registered under another
    /// app): counted like a wrong secret's 21004, buried alone, halting (the Server API) only when several agree.
    @Test func anUntrustedSignedAnswerCountsTowardAHalt() throws {
        let (settlement, gate, store) = try Self.run(FakeVerifier(.serverAPI(.untrusted)), subscription: Self.onServerAPI)
        #expect(settlement == "bury")
        #expect(gate.heard.contains("configuration error server_api"))
        #expect(!gate.heard.contains { $0.hasPrefix("halt") })
        #expect(store.written.isEmpty)
    }

    /// Apple's 429 spends only the endpoint's budget, for Retry-After: the job waits without being
    /// charged an attempt, and the fleet does not pause (nothing is reported unanswered).
    @Test func aRateLimitedAnswerSpendsOnlyItsEndpointsBudget() throws {
        let (settlement, gate, store) = try Self.run(
            FakeVerifier(.serverAPI(.rateLimited(retryAfter: .seconds(7)))), subscription: Self.onServerAPI)
        #expect(settlement == "postpone")
        #expect(gate.heard == ["answer none", "throttled subscription_statuses"])
        #expect(store.written.map(\.attempt.outcome) == [.retryable] && store.written.allSatisfy { $0.change == nil })

        // The next job of that endpoint is not even asked about; one of verifyReceipt's is.
        let spent = FakeGate()
        spent.admissions = [.throttled(.seconds(7))]
        let verifier = FakeVerifier(.status(0, isRetryable: nil), response: try Self.activeResponse())
        #expect(try Self.run(verifier, gate: spent, subscription: Self.onServerAPI).settlement == "postpone")
        #expect(verifier.calls == 0)
        #expect(try Self.run(verifier, gate: spent).settlement == "ack verified")
        #expect(spent.endpoints == [.subscriptionStatuses, .verifyReceipt])

        // A further call (a page of history) refused because its endpoint is spent: the job waits, uncharged.
        let historySpent = FakeGate()
        historySpent.admissions = [.granted(slots: [.zero]), .throttled(.seconds(3))]
        let paging = FakeVerifier(.status(0, isRetryable: nil), response: try Self.activeResponse())
        paging.furtherCall = .transactionHistory
        #expect(try Self.run(paging, gate: historySpent, subscription: Self.onServerAPI).settlement == "postpone")
        #expect(historySpent.endpoints == [.subscriptionStatuses, .transactionHistory])
    }

    /// A call whose slot passed before it left (its thread preempted) books another as it leaves;
    /// when the fleet paused meanwhile, nothing is sent and the job waits for the pause, uncharged,
    /// with nothing told to the fleet (Apple heard nothing).
    @Test func aCallTooLateForItsSlotIsNotSentWhenNoOtherCanBeHad() throws {
        let gate = FakeGate()
        gate.departures = [.paused(.seconds(20))]
        let verifier = FakeVerifier(.status(0, isRetryable: nil), response: try Self.activeResponse())
        let (settlement, _, store) = try Self.run(verifier, gate: gate)
        #expect(settlement == "postpone")
        #expect(verifier.calls == 0, "Apple was not asked")
        #expect(gate.heard.isEmpty, "no answer to tell")
        #expect(store.written.map(\.attempt.outcome) == [.retryable] && store.written.allSatisfy { $0.change == nil })

        let rebooked = FakeGate()
        rebooked.departures = [.granted(slots: [.zero])]
        #expect(try Self.run(verifier, gate: rebooked).settlement == "ack verified")
        #expect(verifier.calls == 1)
    }

    /// A transaction Apple knows in neither environment is no purchase: invalid, as 21010 makes it.
    @Test func aTransactionUnknownEverywhereIsAPermanentFailure() throws {
        let (settlement, _, store) = try Self.run(FakeVerifier(.serverAPI(.notFoundAnywhere)))
        #expect(settlement == "ack permanent_failure")
        #expect(store.written.map(\.attempt.outcome) == [.permanentFailure])
    }

    /// A subscription on the Server API is asked about by its original transaction, with the
    /// latest transaction the fleet knows; it needs no receipt. Others follow the deployment's default.
    @Test func theBackendChoosesWhatAppleIsAskedAbout() throws {
        let verifier = FakeVerifier(.status(0, isRetryable: nil), response: try Self.activeResponse())
        var moved = Self.subscription
        moved.backend = .serverAPI
        moved.receipt = nil
        moved.state = try SubscriptionAnalyzer.analyze(
            stored: nil, response: Self.activeResponse(), originalTransactionID: moved.originalTransactionID, now: Date()).state
        #expect(try Self.run(verifier, subscription: moved).settlement == "ack verified")
        #expect(try Self.run(verifier, subscription: Self.subscription).settlement == "ack verified")
        let store = FakeStore()
        let following = try Self.useCase(verifier, gate: FakeGate(), store: store, defaultBackend: .serverAPI)
        let job = Job(subscriptionID: 7, runID: "t", reason: .nightly, enqueuedAt: Int64(Date().timeIntervalSince1970 * 1000))
        _ = try following.write([following.decide(job, Self.subscription)])
        #expect(verifier.subjects.map(\.description) == [
            "transaction 1000000000000007, known 2000000000000007", "receipt", "transaction 1000000000000007, known none, refunds never read",
        ])
        #expect(store.written.map(\.attempt.backend) == [.serverAPI])
    }

    /// A quiet subscription's nightly check leaves its refunds to their day of the cycle; a check
    /// someone asked for (Apple's notification: a REFUND's re-check must see the refund) reads them.
    @Test func aNotifiedCheckReadsTheRefundsWhateverTheDay() throws {
        let verifier = FakeVerifier(.status(0, isRetryable: nil), response: try Self.activeResponse())
        var quiet = Self.onServerAPI
        quiet.state = try SubscriptionAnalyzer.analyze(
            stored: nil, response: Self.activeResponse(), originalTransactionID: quiet.originalTransactionID, now: Date()).state
        let verification = try Self.useCase(verifier, gate: FakeGate(), store: FakeStore())
        for reason in [Job.Reason.nightly, .notification] {
            let job = Job(subscriptionID: 7, runID: "t", reason: reason, enqueuedAt: Int64(Date().timeIntervalSince1970 * 1000))
            _ = try verification.write([verification.decide(job, quiet)])
        }
        let refunds = verifier.subjects.compactMap { subject -> RefundCheck? in
            if case .transaction(_, _, let refunds, _) = subject { refunds } else { nil }
        }
        #expect(refunds.map { $0.isDue(at: Instant(Date())) } == [false, true])
    }

    /// A nightly re-check of a transaction Apple knew in neither environment asks one of them;
    /// a notification's check (Apple knows it now) asks both.
    @Test func aNightlyRecheckOfAnUnknownTransactionAsksOneEnvironment() throws {
        let verifier = FakeVerifier(.serverAPI(.notFoundAnywhere))
        var unknown = Self.onServerAPI
        unknown.state = SubscriptionAnalyzer.permanentFailure(
            stored: nil, originalTransactionID: unknown.originalTransactionID, reason: "nowhere", status: nil,
            now: Date() - 86_400).state
        let verification = try Self.useCase(verifier, gate: FakeGate(), store: FakeStore())
        for reason in [Job.Reason.nightly, .notification] {
            let job = Job(subscriptionID: 7, runID: "t", reason: reason, enqueuedAt: Int64(Date().timeIntervalSince1970 * 1000))
            _ = try verification.write([verification.decide(job, unknown)])
        }
        let onlyIn = verifier.subjects.map { subject -> AppStoreEnvironment? in
            if case .transaction(_, _, _, let onlyIn) = subject { onlyIn } else { nil }
        }
        let tonight = AppStoreEnvironment.recheck(ofUnknown: unknown.originalTransactionID, filedIn: unknown.environment, on: Date())
        #expect(onlyIn == [tonight, nil])
    }

    /// verifyReceipt needs the receipt. Retention drops those of subscriptions over long ago: a job
    /// for one (a notification's) is skipped, since the app registers the returning customer's new
    /// receipt anyway. Any other subscription without one is a fault for the dead letters.
    @Test func aSubscriptionWithoutAReceiptIsSkippedWhenOverAndBuriedOtherwise() throws {
        let verifier = FakeVerifier(.status(0, isRetryable: nil), response: try Self.activeResponse())
        var active = Self.subscription
        active.receipt = nil
        active.state = try SubscriptionAnalyzer.analyze(
            stored: nil, response: Self.activeResponse(), originalTransactionID: active.originalTransactionID, now: Date()).state
        var expired = active
        expired.state?.status = .expired
        #expect(try Self.run(verifier, subscription: expired).settlement == "ack skipped")
        #expect(try Self.run(verifier, subscription: active).settlement == "bury")
        #expect(verifier.calls == 0, "Apple is not asked without a receipt")
    }

    /// A worker without a Server API key cannot ask about a subscription moved to it: that is the
    /// deployment's configuration, not the subscription's, so the Server API halts with the reason.
    @Test func aSubscriptionOnTheServerAPIWithoutAKeyHaltsTheServerAPI() throws {
        let (settlement, gate, store) = try Self.run(FakeVerifier(.serverAPI(.notConfigured)), subscription: Self.onServerAPI)
        #expect(settlement == "postpone")
        #expect(gate.heard.contains("halt server_api"))
        #expect(store.written.isEmpty)
    }
}

extension VerificationSubject {
    /// What was asked, for comparing: "receipt", or the transaction, the latest one known and whether its refunds were ever read.
    var description: String {
        switch self {
        case .receipt: "receipt"
        case .transaction(let id, let known, let refunds, let onlyIn):
            "transaction \(id), known \(known ?? "none")\(refunds.lastRead == nil ? ", refunds never read" : "")"
                + (onlyIn.map { ", only in \($0.rawValue)" } ?? "")
        }
    }
}
