import Foundation
import JobQueue
import Ledger
import RedisClient

/// Whether an app's V2 notifications arrive, judged by each scheduler pass from the app's last
/// day: the changes the fleet learned of (by notification or by check) against the notifications
/// that reached `serve`. While they arrive the app is on the notification-first schedule (its
/// active subscriptions checked when their renewal is due and by the rolling audit); when none
/// came, or too few for its changes, it is checked nightly, as before notifications, until they
/// come back. `status`, the console and `receiptfleet_app_notification_first` show the verdict.
public struct NotificationHealth: Sendable, Codable, Equatable {
    public var app: String
    /// True: notification-first; false: checked nightly.
    public var notificationFirst: Bool
    /// Why, for people.
    public var why: String
    public var changes: Int
    public var notified: Int

    enum CodingKeys: String, CodingKey {
        case app, notificationFirst = "notification_first", why, changes, notified
    }

    /// How far back a pass looks.
    public static let window: TimeInterval = 86_400
    /// Fewer notifications than this share of the app's changes: most changes go unannounced.
    static let leastAnnouncedShare = 0.25

    /// The verdict for `app` from its reading (nil: nothing happened to it, nor came, in the window).
    public static func judge(app: String, _ reading: NotificationReading?) -> NotificationHealth {
        let (changes, notified) = (reading?.changes ?? 0, reading?.notified ?? 0)
        let why: String
        let healthy: Bool
        if notified == 0 {
            (healthy, why) = (false, "no V2 notification arrived in the last 24 hours")
        } else if Double(notified) < leastAnnouncedShare * Double(changes) {
            (healthy, why) = (false, "only \(notified) V2 notifications for \(changes) changes in the last 24 hours")
        } else {
            (healthy, why) = (true, "\(notified) V2 notifications for \(changes) changes in the last 24 hours")
        }
        return NotificationHealth(app: app, notificationFirst: healthy, why: why, changes: changes, notified: notified)
    }

    /// The verdicts of the last pass, as it recorded them in Redis; empty before the first.
    public static func last(on redis: RedisConnection, keys: QueueKeys) throws -> [NotificationHealth] {
        try redis.command("GET", keys.notificationHealth).bytes.flatMap {
            try? JSONDecoder().decode([NotificationHealth].self, from: Data($0))
        } ?? []
    }

    static func record(_ verdicts: [NotificationHealth], on redis: RedisConnection, keys: QueueKeys) throws {
        _ = try redis.command("SET", keys.notificationHealth, String(decoding: try JSONEncoder().encode(verdicts), as: UTF8.self))
    }
}
