import AppStore
import Console
import FleetConfiguration
import Metrics
import Fleet
import Foundation
import Hummingbird
import JobQueue
import Lanes
import Logging
import ServiceLifecycle

/// Lanes, each a thread with its own Redis, PostgreSQL and verifyReceipt connections: the only
/// way the async handlers reach the blocking clients.

/// `receiptfleet serve`: the HTTP API an app's back end talks to (docs/api.md, docs/openapi.yaml).
///
///     POST /v1/receipts                    register a purchase: verify now, store, answer the entitlement
///     POST /v1/transactions                the same for a StoreKit 2 purchase (a signed transaction or its id)
///     GET  /v1/subscriptions/{id}          one subscription with its history
///     GET  /v1/subscriptions?original_transaction_id=… | ?account_id=…
///     GET  /v1/purchases?transaction_id=… | ?account_id=…   one-time purchases (lifetime, non-renewing)
///     DELETE /v1/accounts/{id}             forget an account's subscriptions and purchases (deletion requests)
///     POST /v1/notifications/apple         App Store Server Notifications V1 and V2 (no token: Apple signs)
///     /console                             the ops console, when operator tokens are configured (its own login)
public final class APIServer: NamedService {
    public static let notificationPath = "/v1/notifications/apple"

    let settings: APISettings
    let fleet: FleetSettings
    let logger: Logger
    let metrics: APIMetrics
    /// Apple's answers to registrations and the console's calls, under the workers' names; the
    /// process's `TimingsReporter` reports their timings.
    public let fleetMetrics: FleetMetrics
    let lanes: APILanes
    /// Per client (an API token's name, or the address of a caller without one), across replicas.
    let clientLimiter: FleetClientLimiter
    /// Apple's authenticated notifications, all together, in this process: they must be taken
    /// when Redis is down too (they are stored in PostgreSQL).
    let notificationLimiter: ClientRateLimiter
    /// The ops console under /console, with its own login; nil when no operator token is configured.
    let console: OpsConsole?
    let onListening: @Sendable (Int) async -> Void
    /// The process's: the "now" a notification's certificates and a registration's transaction are judged at.
    let clock: any FleetClock

    /// - Parameters:
    ///   - metrics: where the counters go (see `APIMetrics`); the process's bootstrapped backend by default.
    ///   - clock: the process's, which its lanes and its console read too; the settings' by default.
    /// Throws when the client rate limit is not a rate (see `RateLimit`).
    public init(
        settings: APISettings, fleet: FleetSettings, console: ConsoleSettings? = nil, logger: Logger,
        metrics: any MetricsFactory = MetricsSystem.factory, clock: (any FleetClock)? = nil,
        onListening: @escaping @Sendable (Int) async -> Void = { _ in }
    ) throws {
        self.settings = settings
        self.onListening = onListening
        let clock = clock ?? fleet.processClock()
        self.clock = clock
        let fleetMetrics = FleetMetrics(factory: metrics)
        self.fleetMetrics = fleetMetrics
        self.console = try console.map { try OpsConsole(settings: $0, fleet: fleet, metrics: fleetMetrics, logger: logger, clock: clock) }
        self.fleet = fleet
        self.logger = logger
        self.metrics = APIMetrics(factory: metrics)
        clientLimiter = FleetClientLimiter(
            fleet: fleet, limit: try RateLimit(perSecond: settings.clientRateLimit, burst: settings.clientRateBurst), logger: logger)
        notificationLimiter = ClientRateLimiter(perSecond: settings.notificationRateLimit, burst: settings.notificationRateBurst)
        let consumer = "api-" + JobQueue.consumerName(thread: 0)  // enqueues only; never reserves
        var laneFleet = fleet
        laneFleet.redisTimeout = min(fleet.redisTimeout, Self.redisDeadline)
        laneFleet.postgresTimeout = min(fleet.postgresTimeout, Self.postgresDeadline)
        lanes = APILanes(size: settings.lanes) { [laneFleet, clock] in
            try Connections(settings: laneFleet, consumer: consumer, enqueueOnly: true, clock: clock)
        }
    }

    /// The longest a lane waits for one Redis command: a caller is waiting, and a Redis that does
    /// not answer within it is treated as down (`ServerRest.redis`) rather than waited for. Far above
    /// a healthy Redis's slowest script (a scheduler page's enqueue), far below a caller's patience.
    static let redisDeadline = Duration.milliseconds(500)
    /// The same for one PostgreSQL call, connecting included (`ServerRest.postgres`): the API's
    /// statements are indexed reads and one subscription's writes, milliseconds when healthy; two
    /// seconds leave room for a lock held by a busy night.
    static let postgresDeadline = Duration.seconds(2)

    /// The console's sampler, a service of its own beside this one, when the console is mounted.
    public var consoleSampler: ConsoleSampler? { console?.sampler }

    /// Serves until graceful shutdown (or the task is cancelled), then closes the lanes.
    /// `onListening` (given to `init`) receives the bound port (useful with port 0).
    public func run() async throws {
        try await BoundedServer.serve(
            router(), host: settings.host, port: settings.port, deadline: settings.requestDeadline, maxConnections: settings.maxConnections,
            logger: logger, onListening: onListening, closingOn: "rf-api-stop"
        ) { [lanes, clientLimiter, console] in
            lanes.shutdown()
            clientLimiter.shutdown()
            console?.shutdown()
        }
    }

    func router() -> Router<APIRequestContext> {
        let router = Router(context: APIRequestContext.self)
        router.add(middleware: ProtectionMiddleware(
            tokens: settings.tokens, limiter: clientLimiter, trustedProxies: settings.trustedProxies, maxBodyBytes: settings.maxBodyBytes, metrics: metrics, openPaths: [Self.notificationPath],
            consoleMounted: console != nil))
        console?.addRoutes(to: router)
        let registrar = Registrar(
            fleet: fleet, settings: settings, lanes: lanes, metrics: fleetMetrics, logger: logger, clock: clock, redisRest: ServerRest.redis())
        router.post("/v1/receipts") { request, context in
            try context.require(.register)
            let body = try await self.decode(RegistrationRequest.self, from: request)
            do {
                let (answer, pending) = try await registrar.register(body)
                self.metrics.registration(pending ? "pending" : "registered")
                return try Self.json(answer, status: pending ? .accepted : .ok)
            } catch let error as APIError {
                self.metrics.registration(APIMetrics.registrationOutcome(of: error))
                throw error
            }
        }
        router.post("/v1/transactions") { request, context in
            try context.require(.register)
            let body = try await self.decode(TransactionRegistrationRequest.self, from: request)
            do {
                let answer = try await registrar.register(body)
                self.metrics.registration("registered")
                return try Self.json(answer)
            } catch let error as APIError {
                self.metrics.registration(APIMetrics.registrationOutcome(of: error))
                throw error
            }
        }
        router.get("/v1/subscriptions/:id") { _, context in
            try context.require(.read)
            guard let id = context.parameters.get("id").flatMap(Int64.init), id > 0 else {
                throw APIError.badRequest("invalid_id", "the subscription id must be a positive whole number")
            }
            let view = try await self.lanes.run { connections -> SubscriptionView? in
                guard let detail = try connections.ledger.detail(id: id, events: 50, verifications: 0) else { return nil }
                return SubscriptionView(detail.subscription, history: .init(
                    transactions: detail.transactions, events: detail.events.map(\.event)), now: connections.clock.now())
            }
            guard let view else { throw APIError(.notFound, "subscription_not_found", "no subscription has id \(id)") }
            return try Self.json(view)
        }
        router.get("/v1/subscriptions") { request, context in
            try context.require(.read)
            let (byTransaction, byAccount) = try Self.lookup(request, by: "original_transaction_id", or: "account_id")
            let app = try self.app(of: request)
            let views = try await self.lanes.run { connections -> [SubscriptionView] in
                let (ledger, now) = (connections.ledger, connections.clock.now())
                if let byTransaction {
                    return try ledger.subscription(originalTransactionID: byTransaction, app: app).map { [SubscriptionView($0, now: now)] } ?? []
                }
                let account = byAccount ?? ""
                // Claimed but not yet proven by Apple: listed as pending, without state or entitlement.
                let pending = try ledger.pendingClaims(accountID: account, app: app).compactMap { try ledger.subscription(id: $0) }
                return try ledger.subscriptions(accountID: account, app: app).map { SubscriptionView($0, now: now) }
                    + pending.map { SubscriptionView.pending($0, now: now) }
            }
            return try Self.json(["subscriptions": views])
        }
        router.get("/v1/purchases") { request, context in
            try context.require(.read)
            let (byTransaction, byAccount) = try Self.lookup(request, by: "transaction_id", or: "account_id")
            let app = try self.app(of: request)
            let records = try await self.lanes.run { connections in
                if let byTransaction {
                    return try connections.ledger.purchase(transactionID: byTransaction, app: app).map { [$0] } ?? []
                }
                return try connections.ledger.purchases(accountID: byAccount ?? "", app: app)
            }
            return try Self.json(["purchases": records.map(PurchaseView.init)])
        }
        router.delete("/v1/accounts/:id") { request, context in
            try context.require(.deleteAccounts)
            guard let segment = context.parameters.get("id")?.removingPercentEncoding else {
                throw APIError.badRequest("invalid_account_id", "the account id must be a non-empty, percent-encoded path segment")
            }
            let account = try APIError.checkedID(segment, "account_id")
            let deletion = try await AccountDeletion.forget(
                account: account, app: try self.app(of: request), by: context.client ?? "unknown", in: self.lanes, logger: self.logger)
            return try Self.json(deletion)
        }
        for consented in [true, false] {
            let route: @Sendable (Request, APIRequestContext) async throws -> Response = { request, context in
                try context.require(.refundConsent)
                guard let segment = context.parameters.get("id")?.removingPercentEncoding else {
                    throw APIError.badRequest("invalid_account_id", "the account id must be a non-empty, percent-encoded path segment")
                }
                let account = try APIError.checkedID(segment, "account_id")
                let (app, client) = (try self.app(of: request), context.client ?? "unknown")
                try await self.lanes.run { try $0.ledger.setRefundConsent(app: app, accountID: account, consented: consented, by: client) }
                return try Self.json(RefundConsent(accountID: account, app: app, consented: consented))
            }
            if consented { router.put("/v1/accounts/:id/refund-consent", use: route) } else { router.delete("/v1/accounts/:id/refund-consent", use: route) }
        }
        router.post(RouterPath(Self.notificationPath)) { request, context in
            try await self.receiveNotification(request, from: context.clientAddress)
        }
        return router
    }

    /// Apple re-sends until it gets a 200, so everything that is not a forgery or garbage answers
    /// 200 at once; the verification itself is the job's.
    private func receiveNotification(_ request: Request, from address: String?) async throws -> Response {
        let body: ByteBuffer
        do {
            body = try await request.body.collect(upTo: settings.maxBodyBytes)
        } catch {
            try await clientLimiter.charge(address: address, counting: metrics)
            throw error
        }
        let reader = NotificationReader(
            fleet: fleet, verifier: settings.trustedRoots.isEmpty ? nil : SignedPayloadVerifier(trustedRoots: settings.trustedRoots))
        let notification: AppleNotification
        do throws(NotificationReader.Failure) {
            notification = try await reader.read(Data(buffer: body), now: clock.now())
        } catch .unauthenticated(let version, let reason) {
            try await clientLimiter.charge(address: address, counting: metrics)
            metrics.notification(version: version, "unauthenticated")
            logger.warning("a notification failed authentication", metadata: ["version": "\(version)", "reason": "\(reason)"])
            throw APIError(.unauthorized, "notification_unauthenticated", "not accepted as Apple's: \(reason)")
        } catch .unconfigured(let version, let reason) {
            metrics.notification(version: version, "unconfigured")
            logger.error("a notification cannot be checked", metadata: ["version": "\(version)", "reason": "\(reason)"])
            throw APIError.unavailable("notifications_unconfigured", reason, retryAfter: .seconds(3600))
        } catch .malformed(let reason) {
            try await clientLimiter.charge(address: address, counting: metrics)
            metrics.notification(version: nil, "malformed")
            throw APIError.badRequest("invalid_notification", reason)
        }
        if let wait = notificationLimiter.admit("apple") {
            metrics.rejected("rate_limited")
            throw APIError.rateLimited(retryAfter: wait)  // Apple re-sends with backoff
        }
        if notification.meaning == nil {
            // Handled like every other type (its subscription is re-verified); worth a look at Apple's documentation.
            logger.notice("a notification of a type this version does not know", metadata: ["type": "\(notification.type)"])
        }
        let intake = NotificationIntake(
            acceptedEnvironments: settings.notificationEnvironments, fleet: fleet, metrics: fleetMetrics, logger: logger)
        let result = try await lanes.run { try intake.take(notification, connections: $0) }
        if let redisError = result.redisError {
            logger.warning("a notification is stored, its job not yet enqueued (Redis failed); the scheduler's next pass enqueues it",
                           metadata: ["error": "\(redisError)"])
        }
        metrics.notification(version: notification.version, result.status)
        return try Self.json(result)
    }

    /// The app a lookup is in: its `app` query parameter, which may be left out when the deployment
    /// has one app (accounts and transaction ids are each app's own).
    private func app(of request: Request) throws(APIError) -> String {
        let named: String?
        do {
            named = try fleet.apps.resolve(request.uri.queryParameters["app"].map(String.init))
        } catch {
            throw .badRequest("unknown_app", error.description)
        }
        guard let named else {
            throw .badRequest("app_required", "this deployment has several apps: name one with 'app' ("
                              + fleet.apps.names.joined(separator: ", ") + ")")
        }
        return named
    }

    /// The two query parameters a lookup takes, of which a request must give exactly one, not empty.
    private static func lookup(_ request: Request, by first: String, or second: String) throws -> (String?, String?) {
        let query = request.uri.queryParameters
        let (one, other) = (query[Substring(first)].map(String.init), query[Substring(second)].map(String.init))
        guard (one == nil) != (other == nil), one?.isEmpty != true, other?.isEmpty != true else {
            throw APIError.badRequest("invalid_query", "give exactly one of \(first) or \(second)")
        }
        return (try one.map { try APIError.checkedID($0, first) }, try other.map { try APIError.checkedID($0, second) })
    }

    private func decode<T: Decodable>(_ type: T.Type, from request: Request) async throws -> T {
        let body = try await request.body.collect(upTo: settings.maxBodyBytes)
        // Foundation's decoder takes one of a repeated key's values silently; the caller may have meant the other.
        do {
            _ = try JSONValue.parse(body.readableBytesView, refusingRepeatedKeys: true)
        } catch {
            throw APIError.badRequest("invalid_json", "the body must be one JSON object, each key once: \(error)")
        }
        do {
            return try JSONDecoder().decode(type, from: Data(buffer: body))
        } catch let DecodingError.keyNotFound(key, _) {
            throw APIError.badRequest("missing_field", "the body needs '\(key.stringValue)'")
        } catch let DecodingError.typeMismatch(_, context) {
            throw APIError.badRequest("invalid_field", "'\(context.codingPath.map(\.stringValue).joined(separator: "."))' has the wrong type")
        } catch {
            throw APIError.badRequest("invalid_json", "the body must be a JSON object")
        }
    }

    static func json(_ value: some Encodable, status: HTTPResponse.Status = .ok) throws -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Response(status: status, headers: [.contentType: "application/json"],
                        body: .init(byteBuffer: ByteBuffer(bytes: try encoder.encode(value))))
    }
}
