import Foundation
import HTTPClient
import Lanes
import Synchronization

/// Sends the simulator's V2 notifications where App Store Connect would: to the URL a test or a
/// demo sets (`POST /control/notifications`), one POST of `{"signedPayload": …}` each, from a
/// thread of its own (curl blocks), and keeps Apple's record of every attempt, which the history
/// (`onlyFailures`) and the test notification's status report. With `drop` on, nothing reaches the
/// URL and each attempt is recorded as failed, as when the server was down.
///
/// Apple sends a notification when its event happens and retries a failed one for days; here a
/// notification goes out when the clock reaches it (moved by `POST /control/clock`), once.
final class NotificationSender: Sendable {
    private let lane = Lane<HTTPClient>(name: "simulator-notifications") {
        try HTTPClient(configuration: HTTPClientConfiguration(connectTimeout: .seconds(2), totalTimeout: .seconds(5)))
    }
    private let state = Mutex(State())

    private struct State {
        var url: String?
        var drop = false
        /// Notifications up to here (ms on the simulator's clock) have been sent.
        var sentThroughMs: Int64 = 0
        var attempts: [String: [SendAttempt]] = [:]
        var counts = Counts()
        /// The test notifications asked for, by their token: their notificationUUID and payload.
        var tests: [String: (uuid: String, signedPayload: String)] = [:]
    }

    struct Counts: Sendable, Encodable {
        var sent = 0
        var failed = 0
        var pending = 0
    }

    /// Where notifications go from `nowMs` on (nil: nowhere), and whether they are dropped.
    func configure(url: String?, drop: Bool, nowMs: Int64) {
        state.withLock { state in
            if state.url != url { state.sentThroughMs = nowMs }
            (state.url, state.drop) = (url, drop)
        }
    }

    var configuration: (url: String?, drop: Bool, counts: Counts) {
        state.withLock { ($0.url, $0.drop, $0.counts) }
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

    /// The window of notifications the clock has passed since the last call (nil: nothing to
    /// send, or nowhere to send it); the caller computes them and hands them to `send`.
    func due(nowMs: Int64) -> Range<Int64>? {
        state.withLock { state in
            guard state.url != nil, nowMs > state.sentThroughMs else { return nil }
            defer { state.sentThroughMs = nowMs }
            return state.sentThroughMs..<nowMs
        }
    }

    /// Sends `notifications` in order, on the sender's thread; returns once each was attempted.
    func send(_ notifications: [(uuid: String, signedPayload: String)], nowMs: Int64) async {
        guard let (url, drop) = state.withLock({ state in state.url.map { ($0, state.drop) } }) else { return }
        state.withLock { $0.counts.pending += notifications.count }
        for notification in notifications {
            let result: String
            if drop {
                result = "NO_RESPONSE"
            } else {
                let body = Array(#"{"signedPayload":"\#(notification.signedPayload)"}"#.utf8)
                result = (try? await lane.run { http in Self.result(of: { () throws(HTTPError) in try http.post(url: url, json: body) }) })
                    ?? "OTHER"
            }
            state.withLock { state in
                state.attempts[notification.uuid, default: []].append(SendAttempt(atMs: nowMs, result: result))
                state.counts.pending -= 1
                if result == "SUCCESS" { state.counts.sent += 1 } else { state.counts.failed += 1 }
            }
        }
    }

    /// Apple's `sendAttemptResult` for one POST: a 200 is the only success.
    private static func result(of post: () throws(HTTPError) -> HTTPResponse) -> String {
        do {
            return try post().status == 200 ? "SUCCESS" : "UNSUCCESSFUL_HTTP_RESPONSE_CODE"
        } catch {
            switch error.kind {
            case .timeout: return "TIMED_OUT"
            case .connectionRefused, .connectionReset, .dns: return "SOCKET_ISSUE"
            case .tls, .tlsHandshake: return "TLS_ISSUE"
            case .protocolError: return "INVALID_RESPONSE"
            default: return "OTHER"
            }
        }
    }
}
