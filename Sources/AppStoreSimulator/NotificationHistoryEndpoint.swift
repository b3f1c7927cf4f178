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
            .filter { sender.announces($0.uuid) && (!onlyFailures || !sender.attempts(of: $0.uuid).contains { $0.result == "SUCCESS" }) }
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
    /// oldest first. A paging client asks the same window many times: the last few are kept.
    static func sent(app: Int, from start: Int64, until end: Int64, endpoint: SimulatedEnvironment, setup: ServerAPISimulation)
        -> [SimulatedNotification]
    {
        let key = "\(app)/\(start)/\(end)/\(endpoint.rawValue)"
        if let found = windows.withLock({ $0[key] }) { return found }
        let count = setup.subscriptions.indices.contains(app) ? setup.subscriptions[app] : 0
        let found = SimulatedReceipt.fleet(count: count, seed: setup.seeds[app], anchorMs: setup.anchorMs, app: app)
            .filter { $0.token.environment == endpoint }
            .flatMap { $0.notifications(from: start, until: end) }
            .sorted { ($0.signedDateMs, $0.uuid) < ($1.signedDateMs, $1.uuid) }
        windows.withLock { windows in
            if windows.count >= 8 { windows.removeAll() }
            windows[key] = found
        }
        return found
    }

    private static let windows = Mutex<[String: [SimulatedNotification]]>([:])
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
