import Foundation
import Hummingbird
import ServiceLifecycle
import NIOCore
import Synchronization

/// A stand-in for Apple's verifyReceipt service, speaking its wire format exactly, with a movable clock,
/// fault knobs and request statistics. It stores no receipts: each answer is computed from the
/// receipt token and the clock (see `SimulatedReceipt`).
///
/// Routes: `POST /verifyReceipt` (production), `POST /sandbox/verifyReceipt` (sandbox), the App Store
/// Server API's `GET /inApps/v1/subscriptions/{transactionId}`, `GET /inApps/v2/history/{transactionId}`,
/// `POST /inApps/v1/notifications/history`, the test notification, the renewal-date extensions, Look Up Order ID, Send Consumption Information (and
/// each under `/sandbox`) when set up with `ServerAPISimulation`, `GET /stats`, and the control
/// routes under `/control` (see `addControlRoutes`).
public final class SimulatedAppStore: Sendable {
    /// The time every answer is computed for.
    public let clock: SimulatorClock
    private let stats = SimulatorStats()
    private let state: Mutex<State>
    /// Set when the simulator serves the App Store Server API too.
    let serverAPI: ServerAPISimulation?
    private let signing: SimulatorSigningChain?
    /// Sends V2 notifications to the URL `POST /control/notifications` sets.
    let sender = NotificationSender()

    private struct State {
        var knobs: FaultKnobs
        /// End of the current outage on the simulator clock (ms).
        var outageUntilMs: Int64?
    }

    /// Knobs with a `problem` are refused here as on the control route. With `serverAPI`, the
    /// simulator also answers the App Store Server API for that seeded fleet.
    public init(
        knobs: FaultKnobs = FaultKnobs(), clock: SimulatorClock = SimulatorClock(), serverAPI: ServerAPISimulation? = nil
    ) throws(KnobsError) {
        if let problem = knobs.problem { throw KnobsError(message: problem) }
        self.clock = clock
        self.state = Mutex(State(knobs: knobs))
        self.serverAPI = serverAPI
        signing = serverAPI == nil ? nil : try? SimulatorSigningChain()
    }

    /// The fault knobs in force.
    public var knobs: FaultKnobs { state.withLock { $0.knobs } }

    /// Replaces the knobs (as `POST /control/knobs` does).
    public func setKnobs(_ knobs: FaultKnobs) throws(KnobsError) {
        if let problem = knobs.problem { throw KnobsError(message: problem) }
        state.withLock { $0.knobs = knobs }
    }

    /// What `GET /stats` reports.
    public var statistics: SimulatorStatistics { stats.snapshot(rateLimit: knobs.rateLimit) }

    /// The answers to consumption requests the simulated Server API took, oldest first.
    public var consumptionAnswers: [ReceivedConsumption.Answer] { serverAPI?.consumption.all ?? [] }

    /// Starts the statistics afresh (as `POST /control/reset-stats` does).
    public func resetStatistics() { stats.reset() }

    /// Answers every verifyReceipt with 21005 for `seconds` of simulator time (0 ends an outage);
    /// returns when it ends (ms on the simulator clock).
    @discardableResult
    public func startOutage(seconds: Double) -> Int64 {
        let until = clock.nowMs + Int64(seconds * 1000)
        state.withLock { $0.outageUntilMs = until }
        return until
    }

    /// Where V2 notifications go from now on (nil: nowhere), and how their sending goes (as
    /// `POST /control/notifications` sets).
    public func sendNotifications(to url: String?, knobs: NotificationKnobs = NotificationKnobs()) throws(KnobsError) {
        if let problem = knobs.problem { throw KnobsError(message: problem) }
        sender.configure(url: url, knobs: knobs, nowMs: clock.nowMs)
    }

    /// Sends the notifications the clock has passed since the last time, and the failed ones
    /// whose retry is due, to the URL `sendNotifications(to:)` set; returns once each was attempted.
    public func sendDueNotifications() async {
        let now = clock.nowMs
        guard let serverAPI, let signing else { return }
        var due = sender.dueRetries(nowMs: now)
        if let window = sender.due(nowMs: now) {
            let sender = sender
            due += await sender.onSenderThread {
                serverAPI.seeds.indices.flatMap { app in
                    [SimulatedEnvironment.production, .sandbox].flatMap { environment in
                        NotificationHistoryEndpoint.sent(
                            app: app, from: window.lowerBound, until: window.upperBound, endpoint: environment, setup: serverAPI)
                    }
                }.sorted { ($0.signedDateMs, $0.uuid) < ($1.signedDateMs, $1.uuid) }.compactMap { notification in
                    guard sender.announces(notification.uuid, signedAtMs: notification.signedDateMs) else {
                        MissedChange(notification, why: .unannounced).map(sender.miss)
                        return nil
                    }
                    return NotificationSender.Outgoing(
                        uuid: notification.uuid, signedPayload: notification.signedPayload(signing: signing),
                        environment: notification.environment, subscription: String(notification.transaction.originalTransactionID),
                        change: MissedChange(notification, why: .sendFailed))
                }
            } ?? []
        }
        await sender.send(due, nowMs: now)
    }

    /// The simulator's routes, for an `Application`.
    public func router() -> Router<SimulatorRequestContext> {
        let router = Router(context: SimulatorRequestContext.self)
        router.add(middleware: AppleCallCounting(stats: stats))
        router.post("verifyReceipt") { request, context in
            try await self.verify(request, endpoint: .production, connection: context.channel)
        }
        router.post("sandbox/verifyReceipt") { request, context in
            try await self.verify(request, endpoint: .sandbox, connection: context.channel)
        }
        // Apple answers 21000 when the request is not a POST.
        router.get("verifyReceipt") { _, _ in Self.json(ResponseRenderer.status(21000)) }
        router.get("sandbox/verifyReceipt") { _, _ in Self.json(ResponseRenderer.status(21000)) }
        for (prefix, endpoint) in [("", SimulatedEnvironment.production), ("sandbox/", .sandbox)] {
            router.get("\(prefix)inApps/v1/subscriptions/:id") { request, context in
                let id = context.parameters.get("id") ?? ""
                return try await self.serverAPI(request, endpoint: endpoint) { now, setup, signing in
                    ServerAPIEndpoint.statuses(authorization: request.headers[.authorization], transactionID: id,
                                               endpoint: endpoint, now: now, setup: setup, signing: signing)
                }
            }
            router.get("\(prefix)inApps/v2/history/:id") { request, context in
                let id = context.parameters.get("id") ?? ""
                return try await self.serverAPI(request, endpoint: endpoint) { now, setup, signing in
                    ServerAPIEndpoint.history(authorization: request.headers[.authorization], transactionID: id,
                                              revision: request.uri.queryParameters.get("revision"),
                                              revoked: request.uri.queryParameters.get("revoked").flatMap { Bool($0) }, endpoint: endpoint,
                                              now: now, setup: setup, signing: signing)
                }
            }
            router.post("\(prefix)inApps/v1/notifications/history") { request, context in
                try await self.serverAPIForApp(sending: request, endpoint: endpoint) { body, now, setup, signing, app in
                    NotificationHistoryEndpoint.history(
                        app: app, body: body, paginationToken: request.uri.queryParameters.get("paginationToken"),
                        endpoint: endpoint, now: now, setup: setup, signing: signing, sender: self.sender)
                }
            }
            router.post("\(prefix)inApps/v1/notifications/test") { request, context in
                try await self.serverAPIForApp(request, endpoint: endpoint) { now, _, signing, app in
                    guard self.sender.configuration.url != nil else { return TestNotificationEndpoint.noServerURL }
                    let test = TestNotificationEndpoint.make(app: Catalog.bundleIDs[app], environment: endpoint, nowMs: now, signing: signing)
                    self.sender.remember(test: test.token, uuid: test.uuid, signedPayload: test.signedPayload)
                    // Apple answers at once and sends the notification on its own time.
                    let outgoing = NotificationSender.Outgoing(uuid: test.uuid, signedPayload: test.signedPayload, environment: endpoint)
                    Task { await self.sender.send([outgoing], nowMs: now) }
                    return TestNotificationEndpoint.requested(token: test.token)
                }
            }
            router.put("\(prefix)inApps/v1/subscriptions/extend/:id") { request, context in
                let id = context.parameters.get("id") ?? ""
                return try await self.serverAPIForApp(sending: request, endpoint: endpoint) { body, now, setup, _, app in
                    RenewalExtensionEndpoint.extend(
                        app: app, originalTransactionID: id, body: body, endpoint: endpoint, now: now, setup: setup)
                }
            }
            router.put("\(prefix)inApps/v2/transactions/consumption/:id") { request, context in
                let id = context.parameters.get("id") ?? ""
                return try await self.serverAPIForApp(sending: request, endpoint: endpoint) { body, now, setup, _, app in
                    ConsumptionEndpoint.answer(app: app, transactionID: id, body: body, endpoint: endpoint, now: now, setup: setup)
                }
            }
            router.post("\(prefix)inApps/v1/subscriptions/extend/mass") { request, context in
                try await self.serverAPIForApp(sending: request, endpoint: endpoint) { body, now, setup, _, app in
                    RenewalExtensionEndpoint.extendAll(app: app, body: body, endpoint: endpoint, now: now, setup: setup)
                }
            }
            router.get("\(prefix)inApps/v1/subscriptions/extend/mass/:product/:request") { request, context in
                let (product, identifier) = (context.parameters.get("product") ?? "", context.parameters.get("request") ?? "")
                return try await self.serverAPIForApp(request, endpoint: endpoint) { _, setup, _, app in
                    RenewalExtensionEndpoint.status(app: app, productID: product, requestIdentifier: identifier, setup: setup)
                }
            }
            router.get("\(prefix)inApps/v1/lookup/:order") { request, context in
                let order = context.parameters.get("order") ?? ""
                return try await self.serverAPIForApp(request, endpoint: endpoint) { now, setup, signing, app in
                    OrderLookupEndpoint.lookUp(app: app, orderID: order, endpoint: endpoint, now: now, setup: setup, signing: signing)
                }
            }
            router.get("\(prefix)inApps/v1/notifications/test/:token") { request, context in
                let token = context.parameters.get("token") ?? ""
                return try await self.serverAPIForApp(request, endpoint: endpoint) { _, _, _, _ in
                    TestNotificationEndpoint.status(token: token, sender: self.sender)
                }
            }
        }
        addControlRoutes(to: router)
        return router
    }

    /// The HTTP server, a ServiceLifecycle service: it serves until graceful shutdown or
    /// cancellation; `onListening` receives the bound port (useful with port 0).
    public func server(host: String, port: Int, onListening: @escaping @Sendable (Int) async -> Void) -> some Service {
        Application(
            router: router(),
            configuration: .init(address: .hostname(host, port: port), serverName: "AppStoreSimulator"),
            onServerRunning: { channel in await onListening(channel.localAddress?.port ?? port) })
    }

    private func verify(_ request: Request, endpoint: SimulatedEnvironment, connection: any Channel) async throws -> Response {
        let (knobs, outageUntil) = state.withLock { ($0.knobs, $0.outageUntilMs) }
        stats.recordArrival(environment: endpoint, rateLimit: knobs.rateLimit)
        let body = try await request.body.collect(upTo: 1 << 20)
        let delay = knobs.latency.sample()
        if delay > 0 { try await Task.sleep(for: .milliseconds(delay)) }

        let now = clock.nowMs
        let answer = { VerifyReceiptEndpoint.answer(body: Array(body.readableBytesView), endpoint: endpoint,
                                                    now: now, sharedSecret: knobs.sharedSecret, appSecrets: knobs.appSharedSecrets,
                                                    extensions: self.serverAPI?.extensions) }
        // One draw picks the fault, so each happens at exactly its configured rate.
        let draw = Double.random(in: 0..<1)
        let serviceUnavailableBelow = knobs.serviceUnavailableRate
        let garbageBelow = serviceUnavailableBelow + knobs.garbageRate
        let dropBelow = garbageBelow + knobs.dropRate
        let resetBelow = dropBelow + knobs.resetRate
        let unavailableBelow = resetBelow + knobs.unavailableRate
        if let outageUntil, now < outageUntil {
            return reply(VerifyReceiptEndpoint.failure(21005))
        } else if FaultBodies.isBroken(receiptRequest: body.readableBytesView, share: knobs.garbageReceiptShare) {
            stats.recordAnswer(httpStatus: 200, appleStatus: nil, garbage: true)
            return Response(status: .ok, headers: [.contentType: "application/json"],
                            body: .init(byteBuffer: ByteBuffer(bytes: FaultBodies.truncated(answer().body))))
        } else if draw < serviceUnavailableBelow {
            stats.recordAnswer(httpStatus: 503, appleStatus: nil, garbage: false)
            return Response(status: .serviceUnavailable, headers: [.contentType: "text/html; charset=UTF-8"],
                            body: .init(byteBuffer: ByteBuffer(bytes: FaultBodies.serviceUnavailablePage)))
        } else if draw < garbageBelow {
            let garbage = FaultBodies.garbage(draw: Double.random(in: 0..<1), truncating: answer().body)
            stats.recordAnswer(httpStatus: garbage.httpStatus, appleStatus: nil, garbage: true)
            return Response(status: .init(code: garbage.httpStatus), headers: [.contentType: garbage.contentType],
                            body: .init(byteBuffer: ByteBuffer(bytes: garbage.body)))
        } else if draw < dropBelow {
            stats.recordConnectionFault(.dropped)
            return try await ConnectionFaults.drop(connection)
        } else if draw < resetBelow {
            stats.recordConnectionFault(.resetMidResponse)
            return ConnectionFaults.resetMidResponse(answer().body, on: connection)
        } else if draw < unavailableBelow {
            return reply(VerifyReceiptEndpoint.failure(21005))
        }
        return reply(answer())
    }

    /// A Server API call (`answer` computes Apple's answer at the simulator's time), with the same
    /// latency, outages and 503 pages as verifyReceipt.
    private func serverAPI(
        _ request: Request, endpoint: SimulatedEnvironment,
        answer: (Int64, ServerAPISimulation, SimulatorSigningChain) -> ServerAPIEndpoint.Answer
    ) async throws -> Response {
        let (knobs, outageUntil) = state.withLock { ($0.knobs, $0.outageUntilMs) }
        let overLimit = stats.recordArrival(environment: endpoint, rateLimit: knobs.rateLimit)
        let delay = knobs.latency.sample()
        if delay > 0 { try await Task.sleep(for: .milliseconds(delay)) }
        let now = clock.nowMs
        let reply: ServerAPIEndpoint.Answer
        if let serverAPI, let signing {
            if overLimit {
                // Unlike verifyReceipt, the Server API enforces its limit: past it, Apple answers 429.
                reply = ServerAPIEndpoint.rateLimited
            } else if let outageUntil, now < outageUntil {
                reply = ServerAPIEndpoint.error(500, 5_000_001, "An unknown error occurred. Please try again.")
            } else if Double.random(in: 0..<1) < knobs.serviceUnavailableRate {
                stats.recordAnswer(httpStatus: 503, appleStatus: nil, garbage: false)
                return Response(status: .serviceUnavailable, headers: [.contentType: "text/html; charset=UTF-8"],
                                body: .init(byteBuffer: ByteBuffer(bytes: FaultBodies.serviceUnavailablePage)))
            } else {
                reply = answer(now, serverAPI, signing)
            }
        } else {
            reply = ServerAPIEndpoint.error(
                404, 4_040_000, "This simulator does not serve the App Store Server API: start it with --server-api-key.")
        }
        stats.recordAnswer(httpStatus: reply.httpStatus, appleStatus: nil, garbage: false)
        var headers: HTTPFields = [.contentType: "application/json"]
        if let retryAfter = reply.retryAfter { headers[.retryAfter] = retryAfter }
        return Response(status: .init(code: reply.httpStatus), headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: reply.body)))
    }

    /// A Server API call about one of the account's apps: `answer` also gets the app the bearer
    /// token is for; a token Apple would not take is answered 401.
    private func serverAPIForApp(
        _ request: Request, endpoint: SimulatedEnvironment,
        answer: (Int64, ServerAPISimulation, SimulatorSigningChain, Int) -> ServerAPIEndpoint.Answer
    ) async throws -> Response {
        try await serverAPI(request, endpoint: endpoint) { now, setup, signing in
            guard let app = ServerAPIEndpoint.app(of: request.headers[.authorization], in: setup) else { return ServerAPIEndpoint.unauthorized }
            return answer(now, setup, signing, app)
        }
    }

    /// `serverAPIForApp` for a request that sends JSON, whose body `answer` reads: Apple's are
    /// small, and 64 KiB is plenty.
    private func serverAPIForApp(
        sending request: Request, endpoint: SimulatedEnvironment,
        answer: ([UInt8], Int64, ServerAPISimulation, SimulatorSigningChain, Int) -> ServerAPIEndpoint.Answer
    ) async throws -> Response {
        let body = Array(try await request.body.collect(upTo: 1 << 16).readableBytesView)
        return try await serverAPIForApp(request, endpoint: endpoint) { now, setup, signing, app in answer(body, now, setup, signing, app) }
    }

    /// Apple answers every status, errors included, as HTTP 200 JSON.
    private func reply(_ answer: (status: Int, body: [UInt8])) -> Response {
        stats.recordAnswer(httpStatus: 200, appleStatus: answer.status, garbage: false)
        return Self.json(answer.body)
    }

    static func json(_ body: [UInt8]) -> Response {
        Response(status: .ok, headers: [.contentType: "application/json"],
                 body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }
}

/// Knobs that cannot be used together; `message` says which and why.
public struct KnobsError: Error, Sendable, CustomStringConvertible {
    /// Which knob is wrong and how to fix it.
    public let message: String
    public var description: String { "Invalid simulator knobs: \(message)." }
}
