import Foundation
import Synchronization

/// Get Notification History (`POST /inApps/v1/notifications/history?paginationToken=…`) as Apple
/// answers it: the V2 notifications of the token's app sent from `startDate` to `endDate` (ms, in
/// the JSON body), oldest first, 20 a page, each with Apple's attempts to send it; `onlyFailures`
/// keeps those never delivered. Apple keeps 180 days in production and 30 in the sandbox.
enum NotificationHistoryEndpoint {
    static let pageSize = 20

    static func history(
        app: Int, body: [UInt8], paginationToken: String?, endpoint: SimulatedEnvironment, now: Int64,
        setup: ServerAPISimulation, signing: SimulatorSigningChain, sender: NotificationSender
    ) -> ServerAPIEndpoint.Answer {
        guard let request = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else {
            return ServerAPIEndpoint.error(400, 4_000_000, "Bad request.")
        }
        guard let start = (request["startDate"] as? NSNumber)?.int64Value else {
            return ServerAPIEndpoint.error(400, 4_000_015, "Invalid start date.")
        }
        guard let end = (request["endDate"] as? NSNumber)?.int64Value else { return ServerAPIEndpoint.error(400, 4_000_016, "Invalid end date.") }
        guard start < end else { return ServerAPIEndpoint.error(400, 4_000_013, "Start date after end date.") }
        let kept: Int64 = (endpoint == .production ? 180 : 30) * 86_400_000
        guard start >= now - kept else { return ServerAPIEndpoint.error(400, 4_000_012, "Start date too far in the past.") }
        let offset: Int
        if let paginationToken {
            guard let read = Int(paginationToken), read >= 0 else { return ServerAPIEndpoint.error(400, 4_000_014, "Invalid pagination token.") }
            offset = read
        } else {
            offset = 0
        }
        let onlyFailures = request["onlyFailures"] as? Bool ?? false
        let all = sent(app: app, from: start, until: min(end, now + 1), endpoint: endpoint, setup: setup)
            .filter { sender.announces($0.uuid, signedAtMs: $0.signedDateMs) && (!onlyFailures || !sender.attempts(of: $0.uuid).contains { $0.result == "SUCCESS" }) }
        let page = all.dropFirst(offset).prefix(pageSize)
        let next = offset + page.count
        var json = JSONWriter(capacity: 6144 * page.count + 128)
        json.beginObject()
        json.bool("hasMore", next < all.count)
        if next < all.count { json.string("paginationToken", String(next)) }
        json.beginArray("notificationHistory")
        for notification in page {
            json.beginObject()
            json.string("signedPayload", notification.signedPayload(signing: signing))
            json.sendAttempts(sender.attempts(of: notification.uuid))
            json.endObject()
        }
        json.endArray()
        json.endObject()
        return ServerAPIEndpoint.Answer(httpStatus: 200, body: json.finish())
    }

    /// Every notification of the `app`th app's fleet sent from `start` until `end` at `endpoint`,
    /// oldest first. Working them out takes every receipt's timeline, so a span is worked out once,
    /// a week past `end`, and later windows inside it (a paging client's, the sender's, the next
    /// recovery's) are cut from it: a notification depends only on its own moment.
    static func sent(app: Int, from start: Int64, until end: Int64, endpoint: SimulatedEnvironment, setup: ServerAPISimulation)
        -> [SimulatedNotification]
    {
        let count = setup.subscriptions.indices.contains(app) ? setup.subscriptions[app] : 0
        guard count > 0, start < end else { return [] }
        let key = "\(setup.seeds[app])/\(setup.anchorMs)/\(count)/\(app)/\(endpoint.rawValue)"
        let known = spans.withLock { $0[key] }
        let span: Span
        if let known, known.from <= start, end <= known.until {
            span = known
        } else {
            let from = min(start, known?.from ?? start)
            let until = end + lookAhead
            let notifications = SimulatedReceipt.fleet(count: count, seed: setup.seeds[app], anchorMs: setup.anchorMs, app: app)
                .filter { $0.token.environment == endpoint }
                .flatMap { $0.notifications(from: from, until: until) }
                .sorted { ($0.signedDateMs, $0.uuid) < ($1.signedDateMs, $1.uuid) }
            span = Span(from: from, until: until, notifications: notifications)
            spans.withLock { spans in
                if spans.count >= 8 { spans.removeAll() }
                spans[key] = span
            }
        }
        let first = span.notifications.partitioningIndex { $0.signedDateMs >= start }
        let last = span.notifications.partitioningIndex { $0.signedDateMs >= end }
        return Array(span.notifications[first..<last])
    }

    /// How far past a window's end a span is worked out: the clock's next moves fall inside it.
    static let lookAhead: Int64 = 7 * 86_400_000

    /// The notifications from `from` until `until`, oldest first.
    private struct Span: Sendable {
        let from: Int64
        let until: Int64
        let notifications: [SimulatedNotification]
    }

    private static let spans = Mutex<[String: Span]>([:])
}

extension Array {
    /// The first index whose element satisfies `isAbove`, which is false for a prefix and true after it.
    func partitioningIndex(where isAbove: (Element) -> Bool) -> Int {
        var (low, high) = (0, count)
        while low < high {
            let middle = (low + high) / 2
            if isAbove(self[middle]) { high = middle } else { low = middle + 1 }
        }
        return low
    }
}

extension JSONWriter {
    /// `"sendAttempts": [{"attemptDate": …, "sendAttemptResult": …}, …]`
    mutating func sendAttempts(_ attempts: [SendAttempt]) {
        beginArray("sendAttempts")
        for attempt in attempts {
            beginObject()
            number("attemptDate", attempt.atMs)
            string("sendAttemptResult", attempt.result)
            endObject()
        }
        endArray()
    }
}

/// One of Apple's attempts to send a notification (`sendAttemptItem`): when, and what came of it
/// (`SUCCESS`, `NO_RESPONSE`, `UNSUCCESSFUL_HTTP_RESPONSE_CODE`…).
struct SendAttempt: Sendable {
    let atMs: Int64
    let result: String
}
