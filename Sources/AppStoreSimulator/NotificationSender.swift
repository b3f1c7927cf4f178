import Crypto
import Foundation
import HTTPClient
import Lanes
import Synchronization

/// Sends the simulator's V2 notifications where App Store Connect would: to the URL a test or a
/// demo sets (`POST /control/notifications`), one POST of `{"signedPayload": …}` each, from
/// threads of its own (curl blocks), and keeps Apple's record of every attempt, which the history
/// (`onlyFailures`) and the test notification's status report. Like Apple, it sends many at once
/// (one subscription's in order): a month of a large fleet's changes, one at a time, would take
/// the time of serve's answers over again for each.
///
/// As Apple does, a notification goes out when the clock passes its event (`delay` later), and a
/// failed production send is tried again 1, 12, 24, 48 and 72 hours after the previous attempt
/// (the sandbox sends once). The knobs (`NotificationKnobs`) make sends fail, delay them, make
/// serve unreachable for a while, or leave a share of changes unannounced (Apple's history has no
/// record of those either). Which notifications fail or go unannounced is decided by a digest of
/// their notificationUUID, so a run can be repeated.
final class NotificationSender: Sendable {
    private let lanes = (0..<4).map { index in
        Lane<HTTPClient>(name: "simulator-notifications-\(index)") {
            try HTTPClient(configuration: HTTPClientConfiguration(connectTimeout: .seconds(2), totalTimeout: .seconds(5)))
        }
    }
    private let state = Mutex(State())

    /// Hours after a failed attempt that Apple tries again (production only).
    static let retryHours: [Int64] = [1, 12, 24, 48, 72]

    /// One notification on its way: its first attempt, or a retry.
    struct Outgoing: Sendable {
        let uuid: String
        let signedPayload: String
        let environment: SimulatedEnvironment
        /// Whose it is (an original transaction id): one subscription's go out in order. A test
        /// notification is nobody's (nil).
        var subscription: String? = nil
        /// The change it announces, missed should its first send fail (nil: a test notification or a
        /// consumption request, which announce none).
        var change: MissedChange? = nil
    }

    private struct State {
        var url: String?
        var knobs = NotificationKnobs()
        /// Notifications of events up to here (ms on the simulator's clock) have been sent.
        var sentThroughMs: Int64 = 0
        var attempts: [String: [SendAttempt]] = [:]
        /// Failed sends Apple will try again, and when.
        var retries: [(at: Int64, notification: Outgoing)] = []
        var counts = Counts()
        /// The test notifications asked for, by their token: their notificationUUID and payload.
        var tests: [String: (uuid: String, signedPayload: String)] = [:]
        /// Changes serve did not hear of when they happened: left unannounced, or their first send failed.
        var missed: [MissedChange] = []
    }

    struct Counts: Sendable, Encodable {
        var sent = 0
        var failed = 0
        /// Failed attempts by cause: `fail_share` and `unreachable` (the knobs), serve's status when
        /// it answered another than 200 (`HTTP 429`), or Apple's result (`TIMED_OUT`, `SOCKET_ISSUE`, …).
        var failedBy: [String: Int] = [:]
        var pending = 0
        /// Failed sends waiting for Apple's next attempt.
        var retrying = 0
    }

    /// Where notifications go from `nowMs` on (nil: nowhere), and how their sending goes.
    func configure(url: String?, knobs: NotificationKnobs, nowMs: Int64) {
        state.withLock { state in
            if state.url != url { state.sentThroughMs = nowMs - knobs.delayMs }
            (state.url, state.knobs) = (url, knobs)
        }
    }

    var configuration: (url: String?, knobs: NotificationKnobs, counts: Counts) {
        state.withLock { ($0.url, $0.knobs, $0.counts) }
    }

    /// Whether Apple announces the notification `uuid` at all (and keeps it in its history).
    func announces(_ uuid: String, signedAtMs: Int64) -> Bool {
        let knobs = state.withLock { $0.knobs }
        return signedAtMs >= knobs.faultsUntilMs || Self.share(of: uuid, "announce") >= knobs.unannouncedShare
    }

    /// The changes serve did not hear of when they happened, in the order they were missed: the
    /// ground truth a freshness benchmark times the fleet's own finding of them against.
    var missed: [MissedChange] {
        state.withLock { $0.missed }
    }

    /// Notes a change serve was not told of (one Apple leaves unannounced).
    func miss(_ change: MissedChange) {
        state.withLock { $0.missed.append(change) }
    }

    /// Keeps a test notification for its status (`GET /inApps/v1/notifications/test/{token}`).
    func remember(test token: String, uuid: String, signedPayload: String) {
        state.withLock { $0.tests[token] = (uuid, signedPayload) }
    }

    func test(_ token: String) -> (uuid: String, signedPayload: String)? {
        state.withLock { $0.tests[token] }
    }

    /// Apple's attempts to send the notification `uuid`, oldest first.
    func attempts(of uuid: String) -> [SendAttempt] {
        state.withLock { $0.attempts[uuid] ?? [] }
    }

    /// The window of events whose notifications are due since the last call (nil: nothing to
    /// send, or nowhere to send it); the caller computes them and hands them to `send`.
    func due(nowMs: Int64) -> Range<Int64>? {
        state.withLock { state in
            let through = nowMs - state.knobs.delayMs
            guard state.url != nil, through > state.sentThroughMs else { return nil }
            defer { state.sentThroughMs = through }
            return state.sentThroughMs..<through
        }
    }

    /// Runs `work` on the sender's thread: working out a window's notifications takes a fleet's
    /// timelines, too long for Swift's pool, where the simulator's answers are made.
    func onSenderThread<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T? {
        try? await lanes[0].run { _ in work() }
    }

    /// The failed sends whose next attempt is due at `nowMs`, taken off the list.
    func dueRetries(nowMs: Int64) -> [Outgoing] {
        state.withLock { state in
            let due = state.retries.filter { $0.at <= nowMs }.map(\.notification)
            state.retries.removeAll { $0.at <= nowMs }
            state.counts.retrying = state.retries.count
            return due
        }
    }

    /// Attempts `notifications`, each subscription's in order, on the sender's threads; returns once
    /// each was attempted.
    func send(_ notifications: [Outgoing], nowMs: Int64) async {
        guard let (url, knobs) = state.withLock({ state in state.url.map { ($0, state.knobs) } }) else { return }
        state.withLock { $0.counts.pending += notifications.count }
        let queues = Dictionary(grouping: notifications) { notification in
            let subscription = notification.subscription ?? notification.uuid
            return Int(UInt(bitPattern: subscription.hashValue) % UInt(lanes.count))
        }
        await withTaskGroup(of: Void.self) { group in
            for (lane, queue) in queues {
                group.addTask {
                    for notification in queue { await self.attempt(notification, url: url, knobs: knobs, nowMs: nowMs, on: self.lanes[lane]) }
                }
            }
        }
    }

    /// One attempt to send `notification`, recorded as Apple records it; a failed one is tried
    /// again on Apple's schedule.
    private func attempt(_ notification: Outgoing, url: String, knobs: NotificationKnobs, nowMs: Int64, on lane: Lane<HTTPClient>) async {
        let tried = attempts(of: notification.uuid).count
        // Apple's result, and the cause a failure is counted under: the knob, or serve's answer (`result(of:)`).
        let (result, cause): (String, String)
        if knobs.drop || nowMs < knobs.unreachableUntilMs {
            (result, cause) = ("NO_RESPONSE", "unreachable")
        } else if nowMs < knobs.faultsUntilMs, Self.share(of: notification.uuid, "attempt \(tried)") < knobs.failShare {
            (result, cause) = ("UNSUCCESSFUL_HTTP_RESPONSE_CODE", "fail_share")
        } else {
            let body = Array(#"{"signedPayload":"\#(notification.signedPayload)"}"#.utf8)
            (result, cause) = (try? await lane.run { http in Self.result(of: { () throws(HTTPError) in try http.post(url: url, json: body) }) })
                ?? ("OTHER", "OTHER")
        }
        state.withLock { state in
            state.attempts[notification.uuid, default: []].append(SendAttempt(atMs: nowMs, result: result))
            state.counts.pending -= 1
            if result == "SUCCESS" {
                state.counts.sent += 1
                return
            }
            state.counts.failed += 1
            state.counts.failedBy[cause, default: 0] += 1
            if tried == 0, let change = notification.change { state.missed.append(change) }
            if notification.environment == .production, tried < Self.retryHours.count {
                state.retries.append((nowMs + Self.retryHours[tried] * 3_600_000, notification))
                state.counts.retrying = state.retries.count
            }
        }
    }

    /// A number in [0, 1) drawn from `uuid` and `purpose`: the same every run.
    private static func share(of uuid: String, _ purpose: String) -> Double {
        let digest = SHA256.hash(data: Data("\(purpose)/\(uuid)".utf8))
        let number = digest.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        return Double(number >> 11) / Double(UInt64(1) << 53)
    }

    /// Apple's `sendAttemptResult` for one POST (a 200 is the only success), and the cause of a
    /// failure: the result, or for another status the status itself (`HTTP 503`).
    private static func result(of post: () throws(HTTPError) -> HTTPResponse) -> (result: String, cause: String) {
        let result: String
        do {
            let status = try post().status
            return status == 200 ? ("SUCCESS", "") : ("UNSUCCESSFUL_HTTP_RESPONSE_CODE", "HTTP \(status)")
        } catch {
            switch error.kind {
            case .timeout: result = "TIMED_OUT"
            case .connectionRefused, .connectionReset, .dns: result = "SOCKET_ISSUE"
            case .tls, .tlsHandshake: result = "TLS_ISSUE"
            case .protocolError: result = "INVALID_RESPONSE"
            default: result = "OTHER"
            }
        }
        return (result, result)
    }
}

/// A change of a subscription serve was not told of when it happened (`GET /control/notifications/missed`).
struct MissedChange: Sendable, Encodable {
    enum Why: String, Sendable, Encodable {
        /// Apple never announced it, nor keeps it in its history.
        case unannounced
        /// Its first send failed (Apple tries again on its schedule, and its history holds it).
        case sendFailed = "send_failed"
    }

    let originalTransactionID: String
    let type: String
    let subtype: String?
    /// When it happened, on the simulator's clock.
    let atMs: Int64
    let why: Why

    /// The change `notification` announces; nil for a consumption request, which asks for information.
    init?(_ notification: SimulatedNotification, why: Why) {
        guard notification.type != "CONSUMPTION_REQUEST" else { return nil }
        (originalTransactionID, type, subtype) = ("\(notification.transaction.originalTransactionID)", notification.type, notification.subtype)
        (atMs, self.why) = (notification.signedDateMs, why)
    }

    enum CodingKeys: String, CodingKey {
        case originalTransactionID = "original_transaction_id", type, subtype, atMs = "at_ms", why
    }
}

/// How the simulator's notifications fare on their way to serve (`POST /control/notifications`).
public struct NotificationKnobs: Sendable, Equatable {
    /// Every send fails as if serve did not answer, until changed.
    public var drop = false
    /// The share of attempts that fail (each attempt drawn apart, so a retry may succeed).
    public var failShare = 0.0
    /// How long after its event (simulator time, ms) a notification is first sent.
    public var delayMs: Int64 = 0
    /// Until this moment (simulator time, ms) serve cannot be reached: every attempt fails.
    public var unreachableUntilMs: Int64 = 0
    /// The share of changes Apple never announces (its history has no record of them either).
    public var unannouncedShare = 0.0
    /// The two shares apply to changes and attempts before this moment (simulator time, ms) only:
    /// after it every change is announced and every attempt is made, so that a benchmark can go on
    /// until the fleet found every change missed before.
    public var faultsUntilMs = Int64.max

    public init(drop: Bool = false, failShare: Double = 0, delayMs: Int64 = 0, unreachableUntilMs: Int64 = 0, unannouncedShare: Double = 0,
                faultsUntilMs: Int64 = .max) {
        (self.drop, self.failShare, self.delayMs) = (drop, failShare, delayMs)
        (self.unreachableUntilMs, self.unannouncedShare, self.faultsUntilMs) = (unreachableUntilMs, unannouncedShare, faultsUntilMs)
    }

    /// What is wrong with these knobs, if anything.
    var problem: String? {
        if !(0...1).contains(failShare) { return "fail_share must be between 0 and 1." }
        if !(0...1).contains(unannouncedShare) { return "unannounced_share must be between 0 and 1." }
        if delayMs < 0 { return "delay_seconds must not be negative." }
        return nil
    }
}
