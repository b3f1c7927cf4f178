import Fleet
import FleetConfiguration
import Foundation
import HTTPTypes
import Hummingbird
import Lanes
import Ledger
import Logging
import Mustache
import Operations

/// The ops console (docs/operations.md): one web page of the queue, Apple, dead letters,
/// subscriptions and webhooks, with the operator's actions. `receiptfleet serve` mounts it under
/// /console; `receiptfleet console` serves it alone (`ConsoleServer`).
///
///     GET  /console                      the queue, Apple, the scheduler's passes by night; pause and resume
///     GET  /console/dead                 dead letters (?error_class=…&run=…&subscription=…&q=text); replay, purge
///     GET  /console/subscriptions        look one up (?q=id or original_transaction_id); /console/subscriptions/{id};
///                                        verify it now, extend its renewal date (with a confirmation)
///     GET  /console/webhooks             endpoints and their delivery health
///     GET  /console/workers              worker processes and the jobs they hold; delayed jobs (?from=N): retry now,
///                                        delete, bury the ticked ones (with a confirmation)
///     GET  /console/timings              Apple's latency per endpoint, a job's time from first enqueue to done
///                                        (?window=1h|24h|7d): p50, p99, the mean, charts, distributions
///     GET  /console/audit                the audit trail, newest first (?action=…&before=id)
///     GET|POST /console/login, POST /console/logout
///
/// Every number comes from `FleetStatusReader`, as in `receiptfleet status` and the metrics. The
/// pages read and act on lanes (threads with their own connections), never on Swift's cooperative pool.
public final class OpsConsole: Sendable {
    let settings: ConsoleSettings
    let fleet: FleetSettings
    let logger: Logger
    let lanes: LanePool<ConsoleDesk>
    /// The process's: the samples' and the Timings page's now.
    let clock: any FleetClock
    /// Where the console's own calls to Apple (a lookup, an extension, a verification now) are
    /// counted and timed; its process's `TimingsReporter` tells the fleet their timings.
    public let metrics: FleetMetrics
    let pages: MustacheLibrary
    /// Samples the fleet for the charts while the server runs: add it to the application's services.
    public let sampler: ConsoleSampler

    /// `clock`: the process's; the settings' by default.
    public init(settings: ConsoleSettings, fleet: FleetSettings, metrics: FleetMetrics, logger: Logger, clock: (any FleetClock)? = nil) throws {
        self.settings = settings
        self.fleet = fleet
        self.metrics = metrics
        self.logger = logger
        pages = try Templates.library()
        let clock = clock ?? fleet.processClock()
        lanes = LanePool(name: "rf-console", size: settings.lanes) { try ConsoleDesk(settings: fleet, clock: clock) }
        self.clock = clock
        sampler = ConsoleSampler(lanes: lanes, interval: settings.sampleInterval, clock: clock, logger: logger)
    }

    /// Closes the lanes' connections; blocks until the work in hand is done (call it off the cooperative pool).
    public func shutdown() {
        lanes.shutdown()
    }

    /// Adds the console's routes, all under /console, to `router`.
    public func addRoutes<Context: ConsoleRequestContext>(to router: some RouterMethods<Context>) {
        let console = router.group("/console").add(middleware: ConsolePagesMiddleware<Context>(console: self))
        console.get("/assets/console.css") { _, _ in Self.asset(Assets.css, type: "text/css; charset=utf-8") }
        console.get("/assets/console.js") { _, _ in Self.asset(Assets.javascript, type: "text/javascript; charset=utf-8") }
        console.get("/login") { request, _ in try await self.loginPage(request) }
        console.post("/login") { request, context in try await self.logIn(request, from: context.callerAddress) }
        console.post("/logout") { request, _ in try await self.logOut(request) }
        console.get { request, _ in try await self.overview(request) }
        console.post("/gate/pause") { request, _ in try await self.pause(request) }
        console.post("/gate/resume") { request, _ in try await self.resume(request) }
        console.get("/queues") { request, _ in try await self.queues(request) }
        console.get("/dead") { request, _ in try await self.deadLetters(request) }
        console.post("/dead/replay") { request, _ in try await self.replayDeadLetters(request) }
        console.post("/dead/purge") { request, _ in try await self.purgeDeadLetters(request) }
        console.post("/workers/waiting") { request, _ in try await self.actOnWaiting(request) }
        console.get("/subscriptions") { request, _ in try await self.findSubscription(request) }
        console.get("/subscriptions/:id") { request, context in
            try await self.subscription(request, id: context.parameters.get("id") ?? "")
        }
        console.post("/subscriptions/:id/verify") { request, context in
            try await self.verify(request, id: context.parameters.get("id") ?? "")
        }
        console.post("/subscriptions/:id/extend") { request, context in
            try await self.extend(request, id: context.parameters.get("id") ?? "")
        }
        console.get("/webhooks") { request, _ in try await self.webhooks(request) }
        console.get("/workers") { request, _ in try await self.workers(request) }
        console.get("/timings") { request, _ in try await self.timings(request) }
        console.get("/audit") { request, _ in try await self.auditTrail(request) }
        console.get("**") { request, _ -> Response in
            throw ConsoleProblem.notFound("There is no console page at \(request.uri.path).")
        }
    }

    /// Runs an operator's action on a lane and records it in the audit trail as theirs; an action
    /// whose record cannot be written has still happened, and the log says so.
    func audited<T: Sendable>(
        _ who: Operator, _ action: String, target: String? = nil, details: [String: String] = [:],
        results: @escaping @Sendable (T) -> [String: String] = { _ in [:] }, _ body: @escaping @Sendable (ConsoleDesk) throws -> T
    ) async throws -> T {
        let logger = self.logger
        let record = AuditRecord(actor: who.name, via: .console, action: action, target: target, details: details)
        return try await lanes.run { desk in
            try desk.ledger.audited(record, results: results, unrecorded: { error in
                logger.warning("console: the audit trail did not record an action", metadata: ["action": "\(action)", "error": "\(error)"])
            }) { try body(desk) }
        }
    }

    // MARK: Rendering

    /// A page: the template's output with the headers every console page carries.
    func page(_ template: String, _ view: Any, status: HTTPResponse.Status = .ok) -> Response {
        let html = pages.render(view, withTemplate: template) ?? "template \(template) is missing"
        return Response(status: status, headers: Self.pageHeaders, body: .init(byteBuffer: ByteBuffer(string: html)))
    }

    static func redirect(to location: String, cookie: Cookie? = nil) -> Response {
        var response = Response(status: .seeOther, headers: [.location: location, .cacheControl: "no-store"])
        if let cookie { response.setCookie(cookie) }
        return response
    }

    private static func asset(_ text: String, type: String) -> Response {
        Response(status: .ok, headers: [.contentType: type, .cacheControl: "max-age=300", .xContentTypeOptions: "nosniff"],
                 body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    /// Nothing from another host, no framing, no caching of pages that show the fleet.
    static let pageHeaders: HTTPFields = [
        .contentType: "text/html; charset=utf-8",
        .contentSecurityPolicy: "default-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        .xContentTypeOptions: "nosniff", .xFrameOptions: "DENY", .referrerPolicy: "same-origin", .cacheControl: "no-store",
    ]
}

extension HTTPField.Name {
    static let xFrameOptions = Self("X-Frame-Options")!
    static let referrerPolicy = Self("Referrer-Policy")!
}
