import AppStore
import Fleet
import Foundation
import Hummingbird
import JobQueue
import Lanes
import Ledger
import Operations

/// Looking a subscription up by id, original_transaction_id, account id or Apple's order id: its state, entitlement and event
/// timeline; verifying it now.
extension OpsConsole {
    func findSubscription(_ request: Request) async throws -> Response {
        let viewer = try await viewer(request)
        let query = (request.uri.queryParameters["q"].map(String.init) ?? "").trimmingCharacters(in: .whitespaces)
        guard !query.isEmpty else {
            return page("subscriptions", SubscriptionPageView(viewer: viewer, query: "", notice: nil))
        }
        let apps = fleet.apps.names
        var found = try await lanes.run { desk -> [SubscriptionRecord] in
            let byID = try Int64(query).flatMap { try desk.ledger.subscription(id: $0) }.map { [$0] } ?? []
            let byTransaction = try desk.ledger.subscriptions(originalTransactionID: query)
            let byAccount = try apps.flatMap { try desk.ledger.subscriptions(accountID: query, app: $0) }
            var seen = Set<Int64>()
            return (byID + byTransaction + byAccount).filter { seen.insert($0.id).inserted }
        }
        var notice: String?
        // Only what the ledger cannot answer goes to Apple: an order id costs a call to Apple per app.
        if found.isEmpty, OrderLookupResponse.isOrderID(query), fleet.serverAPI != nil {
            let orders = try await lookUpOrder(query, apps: apps)
            found = orders.flatMap(\.subscriptions)
            notice = "Apple's order \(query) holds transactions of these subscriptions."
            if found.isEmpty {
                let transactions = orders.flatMap { order in
                    order.transactions.map { "\($0.transactionID) (\($0.productID ?? "-"), \(order.ledgerEntry(of: $0) ?? "not in the ledger"))" }
                }
                throw ConsoleProblem.notFound(orders.isEmpty
                    ? OrderLookup.unknown(query, apps: apps)
                    : "Apple's order \(query) holds \(transactions.joined(separator: ", ")): no subscription of the ledger.")
            }
        }
        switch found.count {
        case 0:
            throw ConsoleProblem.notFound(
                "No subscription has the id, original_transaction_id or account id '\(query.prefix(80))'"
                    + (fleet.serverAPI == nil ? " (order ids are looked up once the Server API's key is configured)." : "."))
        case 1:
            return Self.redirect(to: "/console/subscriptions/\(found[0].id)")
        default:
            var view = SubscriptionPageView(viewer: viewer, query: query, notice: notice)
            view.choices = .init(items: found.map {
                .init(id: $0.id, app: $0.app, environment: $0.environment.rawValue, account: $0.accountID ?? "-")
            })
            return page("subscriptions", view)
        }
    }

    /// Apple's Look Up Order ID for each app, with the ledger's subscriptions and purchases of the order.
    private func lookUpOrder(_ orderID: String, apps: [String]) async throws -> [FoundOrder] {
        try await lanes.run { [metrics, clock] desk in
            do {
                let door = AppleDoor(
                    gate: desk.gate, settings: desk.settings, metrics: metrics, clock: clock, patience: Self.consolePatience)
                return try OrderLookup.find(
                    orderID, apps: apps, door: door, apple: try AppleClients(settings: desk.settings, clock: clock), ledger: desk.ledger)
            } catch let error as OrderLookupError {
                throw ConsoleProblem.badRequest(error.description)
            }
        }
    }

    func subscription(_ request: Request, id text: String) async throws -> Response {
        let viewer = try await viewer(request)
        let id = try Self.subscriptionID(text)
        let found = try await lanes.run { desk -> (SubscriptionDetail, [ConsumptionRequestRecord], SubscriptionJobs?)? in
            guard let detail = try desk.ledger.detail(id: id, events: 100, verifications: 10) else { return nil }
            // The page is PostgreSQL's: a Redis that does not answer leaves only its part unsaid.
            return (detail, try desk.ledger.consumptionRequests(subscriptionID: id), try? desk.queue.jobs(ofSubscription: id))
        }
        guard let (detail, refundRequests, jobs) = found else { throw ConsoleProblem.notFound("No subscription has id \(id).") }
        var view = SubscriptionPageView(viewer: viewer, query: String(id), notice: Notice(request)?.text)
        view.subscription = .init(detail, refundRequests: refundRequests, jobs: jobs, now: clock.now())
        return page("subscriptions", view)
    }

    /// Verifies the subscription with Apple now, by the worker's own use case (`receiptfleet verify`).
    func verify(_ request: Request, id text: String) async throws -> Response {
        let (who, _) = try await operatorActing(request)
        let id = try Self.subscriptionID(text)
        let (fleet, metrics, logger) = (self.fleet, self.metrics, self.logger)
        guard try await lanes.run({ desk in try desk.ledger.subscription(id: id) != nil }) else {
            throw ConsoleProblem.notFound("No subscription has id \(id).")
        }
        let settlement = try await audited(who, "subscriptions.verify", target: "subscription \(id)", results: { ["result": "\($0)"] }) { _ in
            try ImmediateVerification.run(subscriptionID: id, settings: fleet, metrics: metrics, logger: logger)
        }
        logger.notice("console: verified a subscription now", metadata: [
            "operator": "\(who.name)", "subscription": "\(id)", "result": "\(settlement)",
        ])
        let verified = if case .ack = settlement { true } else { false }
        return Self.redirect(to: "/console/subscriptions/\(id)?done=\(verified ? "verified" : "not-verified")")
    }

    private static func subscriptionID(_ text: String) throws -> Int64 {
        guard let id = Int64(text), id > 0 else {
            throw ConsoleProblem.notFound("'\(text.prefix(40))' is not a subscription id (a positive whole number).")
        }
        return id
    }
}

struct SubscriptionPageView {
    let chrome: Chrome
    var notice: String?
    var query: String
    var subscription: Subscription?
    var choices: Choices?

    init(viewer: OpsConsole.Operator, query: String, notice: String?) {
        (chrome, self.query, self.notice) = (Chrome("Subscriptions", tab: .subscriptions, viewer: viewer), query, notice)
    }

    struct Choices {
        var items: [Item]
        struct Item {
            var id: Int64
            var app: String
            var environment: String
            var account: String
        }
    }

    struct Subscription {
        var id: Int64
        var originalTransactionID: String
        var app: String
        var environment: String
        var backend: String
        var account: String
        var status: String
        var entitlement: String
        var product: String
        var autoRenew: String
        var lastVerified: String
        var nextCheck: String
        var events: [Event]
        var verifications: [Attempt]
        /// The customer's refund requests Apple asked about (CONSUMPTION_REQUEST), newest first.
        var refundRequests: [RefundRequest]
        /// Its jobs in Redis: in hand, waiting for a time, dead.
        var queueSummary: String
        var queueJobs: [QueueJob]

        struct QueueJob {
            var place: String
            var reason: String
            var detail: String
            var deadLink: String?
            /// A waiting job's text: what its retry, delete and bury buttons act on (as on the workers page).
            var waitingJob: String?
        }

        struct Event {
            var type: String
            var occurredAt: String
            var delivery: String
        }

        struct Attempt {
            var at: String
            var outcome: String
            var backend: String
            var apple: String
            var error: String
        }

        struct RefundRequest {
            var transactionID: String
            var reason: String
            var asked: String
            var deadline: String
            var state: String
            /// The answer Apple took, why none was sent, or how the tries went.
            var detail: String

            init(_ record: ConsumptionRequestRecord) {
                transactionID = record.transactionID
                reason = record.reason ?? "-"
                asked = Shown.time(record.signedAt)
                deadline = Shown.time(record.deadline)
                state = record.state
                detail = switch record.state {
                case "answered": (record.answeredAt.map { "at \(Shown.time($0)): " } ?? "") + (record.answer ?? "")
                case "unanswered": record.unansweredReason ?? "-"
                case "pending": "\(record.attempts) attempts" + (record.lastError.map { "; last: \($0)" } ?? "")
                default: "the deadline passed unanswered"
                }
            }
        }

        init(_ detail: SubscriptionDetail, refundRequests: [ConsumptionRequestRecord] = [], jobs: SubscriptionJobs? = nil, now: Date) {
            let record = detail.subscription
            id = record.id
            originalTransactionID = record.originalTransactionID
            app = record.app
            environment = record.environment.rawValue
            backend = record.backend.map { "\($0)" } ?? "the deployment's default"
            account = record.accountID ?? "-"
            status = record.status?.rawValue ?? "unverified"
            let entitlement = record.entitlement(at: now)
            self.entitlement = entitlement.active
                ? "active" + (entitlement.until.map { " until \(Shown.time($0))" } ?? "")
                : "none"
            product = record.state?.productID ?? "-"
            autoRenew = record.state?.autoRenew.map { $0 ? "on" : "off" } ?? "-"
            lastVerified = record.lastVerifiedAt.map { Shown.time($0) + " (\(record.lastOutcome?.rawValue ?? "-"))" } ?? "never"
            nextCheck = record.nextCheckAt.map(Shown.time) ?? "on notification only"
            events = detail.events.map { stored in
                Event(type: stored.event.type.rawValue, occurredAt: Shown.time(stored.event.occurredAt),
                      delivery: stored.publishedAt == nil ? "not yet published" : "published")
            }
            verifications = detail.verifications.map { attempt in
                Attempt(at: Shown.time(attempt.attemptedAt), outcome: attempt.outcome.rawValue,
                        backend: attempt.backend.map { "\($0)" } ?? "-", apple: attempt.appleStatus.map(String.init) ?? "-",
                        error: attempt.error ?? "")
            }
            self.refundRequests = refundRequests.map(RefundRequest.init)
            (queueSummary, queueJobs) = Self.queue(jobs, subscriptionID: record.id, now: now)
        }

        private static func queue(_ jobs: SubscriptionJobs?, subscriptionID: Int64, now: Date) -> (String, [QueueJob]) {
            guard let jobs else { return ("Redis did not answer: its jobs cannot be shown now.", []) }
            let nowMs = Int64(now.timeIntervalSince1970 * 1000)
            func time(_ ms: Int64) -> String { Shown.time(Date(timeIntervalSince1970: Double(ms) / 1000)) }
            let held = jobs.inHand.map { QueueJob(place: "in hand", reason: "\($0.job.reason)", detail: "held by \($0.consumer)") }
            let waiting = jobs.waiting.map { item in
                QueueJob(place: "waiting", reason: item.job.map { "\($0.reason)" } ?? "not a job",
                         detail: (item.dueAt <= nowMs ? "due since " : "due ") + time(item.dueAt)
                             + (item.job.map { $0.attempt > 0 ? ", attempt \($0.attempt)" : ", not tried yet" } ?? ""),
                         waitingJob: item.job?.encoded)
            }
            let dead = jobs.dead.map { letter in
                QueueJob(place: "dead", reason: letter.failure.errorClass,
                         detail: "\(letter.failure.message) (×\(letter.attempts), \(time(letter.buriedAt)))",
                         deadLink: "/console/dead?subscription=\(subscriptionID)")
            }
            let summary = switch (jobs.queued, held.isEmpty && waiting.isEmpty && dead.isEmpty) {
            case (false, true): "No job for it is in the queue, and it has no dead letters."
            case (true, true): "A job for it is ready, about to be taken."
            case (true, false): "A job for it is queued:"
            case (false, false): "No nightly or replayed job for it is queued:"
            }
            let partial = jobs.waitingComplete ? "" : " (the jobs waiting for a time are too many to look through whole: those found)"
            return (summary + partial, held + waiting + dead)
        }
    }
}
