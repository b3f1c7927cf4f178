import Foundation
import Hummingbird
import Synchronization

/// What the simulator has been asked, for load tests and for checking a fleet's manners: totals,
/// recent requests per second, answers per status, and how often the configured rate was exceeded.
/// Windows use the process's monotonic time, not the simulator clock, because they measure real load.
final class SimulatorStats: Sendable {
    private let state = Mutex(State())

    /// Counts an arriving request; it violates `rateLimit` when more than that many requests
    /// (itself included) arrived within the last second. Returns whether it did.
    @discardableResult
    func recordArrival(environment: SimulatedEnvironment, rateLimit: Int?) -> Bool {
        let now = UInt64(ProcessInfo.processInfo.systemUptime * 1e9)
        return state.withLock { state in
            state.total += 1
            state.byEnvironment[environment.rawValue, default: 0] += 1
            let inLastSecond = state.window.record(now)
            state.maxInOneSecond = max(state.maxInOneSecond, inLastSecond)
            state.perSecond.add(second: now / 1_000_000_000)
            guard let rateLimit, inLastSecond > rateLimit else { return false }
            state.violations += 1
            return true
        }
    }

    /// Counts how a request was answered: its HTTP status, and Apple's `status` when the body had one.
    func recordAnswer(httpStatus: Int, appleStatus: Int?, garbage: Bool) {
        state.withLock { state in
            state.byHTTPStatus[String(httpStatus), default: 0] += 1
            if let appleStatus { state.byStatus[String(appleStatus), default: 0] += 1 }
            if garbage { state.garbageBodies += 1 }
        }
    }

    /// Counts one call to an endpoint of Apple's, verifyReceipt's and the Server API's alike.
    func recordCall(to endpoint: AppleEndpointName) {
        state.withLock { $0.byEndpoint[endpoint.rawValue, default: 0] += 1 }
    }

    /// The connection faults the knobs can cause instead of an answer.
    enum ConnectionFault {
        case dropped, resetMidResponse
    }

    /// Counts a request answered by breaking its connection.
    func recordConnectionFault(_ fault: ConnectionFault) {
        state.withLock { state in
            switch fault {
            case .dropped: state.dropped += 1
            case .resetMidResponse: state.resetMidResponse += 1
            }
        }
    }

    func snapshot(rateLimit: Int?) -> SimulatorStatistics {
        let second = UInt64(ProcessInfo.processInfo.systemUptime)
        return state.withLock { state in
            SimulatorStatistics(
                requestsTotal: state.total, perSecondRecent: state.perSecond.counts(before: second, last: 10),
                byStatus: state.byStatus, byHTTPStatus: state.byHTTPStatus, garbageBodies: state.garbageBodies,
                droppedConnections: state.dropped, resetResponses: state.resetMidResponse,
                byEnvironment: state.byEnvironment, byEndpoint: state.byEndpoint, maxRequestsInOneSecond: state.maxInOneSecond,
                rateLimit: rateLimit, rateLimitViolations: state.violations)
        }
    }

    func reset() {
        state.withLock { $0 = State() }
    }

    private struct State {
        var total = 0
        var byEnvironment: [String: Int] = [:]
        var byEndpoint: [String: Int] = [:]
        var byStatus: [String: Int] = [:]
        var byHTTPStatus: [String: Int] = [:]
        var garbageBodies = 0
        var dropped = 0
        var resetMidResponse = 0
        var maxInOneSecond = 0
        var violations = 0
        var window = SlidingSecond()
        var perSecond = SecondBuckets()
    }
}

/// The JSON served at `GET /stats`.
public struct SimulatorStatistics: Sendable, Codable, Equatable {
    /// Requests to verifyReceipt and the Server API's answering endpoints (both environments) since
    /// the start or the last reset; `byEndpoint` has every call to Apple's endpoints by endpoint.
    public var requestsTotal: Int
    /// Requests in each of the last 10 whole seconds, oldest first.
    public var perSecondRecent: [Int]
    /// Apple's `status` of each JSON answer, keyed by code ("0", "21007", …).
    public var byStatus: [String: Int]
    /// HTTP status of every answer ("200", "503", "502").
    public var byHTTPStatus: [String: Int]
    /// Answers no client should accept (HTML 502, truncated JSON, wrong types).
    public var garbageBodies: Int
    /// Requests whose connection was closed without an answer (`drop_rate`).
    public var droppedConnections: Int
    /// Answers cut halfway by a TCP reset (`reset_rate`).
    public var resetResponses: Int
    /// Requests per endpoint, keyed "Production" and "Sandbox".
    public var byEnvironment: [String: Int]
    /// Every call to Apple's endpoints, verifyReceipt's and the Server API's, both environments
    /// together, keyed by `AppleEndpointName`: what a fleet costs Apple, endpoint by endpoint.
    public var byEndpoint: [String: Int]
    /// The most requests seen within any one-second window.
    public var maxRequestsInOneSecond: Int
    /// The configured limit per one-second window, if any.
    public var rateLimit: Int?
    /// Requests that arrived when the window already held `rateLimit` requests.
    public var rateLimitViolations: Int

    enum CodingKeys: String, CodingKey {
        case requestsTotal = "requests_total", perSecondRecent = "per_second_recent", byStatus = "by_status"
        case byHTTPStatus = "by_http_status", garbageBodies = "garbage_bodies", droppedConnections = "dropped_connections"
        case resetResponses = "reset_responses", byEnvironment = "by_environment", byEndpoint = "by_endpoint"
        case maxRequestsInOneSecond = "max_requests_in_one_second", rateLimit = "rate_limit"
        case rateLimitViolations = "rate_limit_violations"
    }
}

/// Arrival times of the last second, oldest first, in a ring that grows with the load.
struct SlidingSecond {
    private var times: [UInt64] = Array(repeating: 0, count: 1024)
    private var head = 0
    private var count = 0

    /// Adds an arrival at `now` (ns, never decreasing) and returns the arrivals within the second ending at it.
    mutating func record(_ now: UInt64) -> Int {
        while count > 0, times[head] + 1_000_000_000 <= now {
            head = (head + 1) % times.count
            count -= 1
        }
        if count == times.count { grow() }
        times[(head + count) % times.count] = now
        count += 1
        return count
    }

    private mutating func grow() {
        let ordered = (0..<count).map { times[(head + $0) % times.count] }
        times = ordered + Array(repeating: 0, count: ordered.count)
        head = 0
    }
}

/// Requests per whole second for the last minute.
struct SecondBuckets {
    private var seconds = [UInt64](repeating: .max, count: 64)
    private var counts = [Int](repeating: 0, count: 64)

    mutating func add(second: UInt64) {
        let slot = Int(second % 64)
        if seconds[slot] != second { (seconds[slot], counts[slot]) = (second, 0) }
        counts[slot] += 1
    }

    /// Counts of the `last` whole seconds before `second`, oldest first.
    func counts(before second: UInt64, last: Int) -> [Int] {
        (1...UInt64(last)).reversed().map { back in
            guard second >= back else { return 0 }
            let slot = Int((second - back) % 64)
            return seconds[slot] == second - back ? counts[slot] : 0
        }
    }
}

/// Apple's endpoints as the simulator counts its calls (`SimulatorStatistics.byEndpoint`).
enum AppleEndpointName: String {
    case verifyReceipt = "verify_receipt"
    case subscriptionStatuses = "subscription_statuses"
    case transactionHistory = "transaction_history"
    case notificationHistory = "notification_history"
    case testNotification = "test_notification"
    case renewalExtension = "renewal_extension"
    case massExtension = "mass_extension"
    case consumption
    case orderLookup = "order_lookup"

    /// The endpoint a request's path names (either environment's), or nil for the simulator's own
    /// routes (stats, control, the webhook sink).
    init?(path: String) {
        let path = path.hasPrefix("/sandbox/") ? String(path.dropFirst("/sandbox".count)) : path
        let byPrefix: [(String, AppleEndpointName)] = [
            ("/verifyReceipt", .verifyReceipt), ("/inApps/v1/subscriptions/extend/mass", .massExtension),
            ("/inApps/v1/subscriptions/extend/", .renewalExtension), ("/inApps/v1/subscriptions/", .subscriptionStatuses),
            ("/inApps/v2/history/", .transactionHistory), ("/inApps/v1/notifications/history", .notificationHistory),
            ("/inApps/v1/notifications/test", .testNotification), ("/inApps/v2/transactions/consumption/", .consumption),
            ("/inApps/v1/lookup/", .orderLookup),
        ]
        guard let name = byPrefix.first(where: { path.hasPrefix($0.0) })?.1 else { return nil }
        self = name
    }
}

/// Counts every request to one of Apple's endpoints, whatever answers it (an outage, a fault).
struct AppleCallCounting: RouterMiddleware {
    let stats: SimulatorStats

    func handle(
        _ request: Request, context: SimulatorRequestContext, next: (Request, SimulatorRequestContext) async throws -> Response
    ) async throws -> Response {
        if let endpoint = AppleEndpointName(path: request.uri.path) { stats.recordCall(to: endpoint) }
        return try await next(request, context)
    }
}
