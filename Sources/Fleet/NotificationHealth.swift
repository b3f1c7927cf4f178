import Foundation
import JobQueue
import Ledger
import RedisClient

/// Whether an app's V2 notifications arrive, judged by each scheduler pass from the app's last
/// day: the changes the fleet learned of (by notification or by check) against the notifications
/// that reached `serve`, and how many of those only recovery brought in. While they arrive the app
/// is on the notification-first schedule (its active subscriptions checked when their renewal is
/// due and by the rolling audit); when none came, too few for its changes, or mostly through
/// recovery (Apple's sends do not reach serve), it is checked nightly, as before notifications,
/// until they come back. `status`, the console and `receiptfleet_app_notification_first` show the
/// verdict, with the day's freshness and checks a subscription.
public struct NotificationHealth: Sendable, Codable, Equatable {
    public var app: String
    /// True: notification-first; false: checked nightly.
    public var notificationFirst: Bool
    /// Why, for people.
    public var why: String
    public var changes: Int
    public var notified: Int
    /// Of `notified`, those only recovery brought in.
    public var recovered: Int?
    /// Seconds from Apple signing a change to the fleet knowing it, 99th percentile over the day.
    public var freshnessP99Seconds: Double?
    /// Checks that asked Apple over the day, per subscription of the app.
    public var checksPerSubscription: Double?

    enum CodingKeys: String, CodingKey {
        case app, notificationFirst = "notification_first", why, changes, notified, recovered
        case freshnessP99Seconds = "freshness_p99_seconds", checksPerSubscription = "checks_per_subscription"
    }

    /// How far back a pass looks.
    public static let window: TimeInterval = 86_400
    /// Fewer notifications than this share of the app's changes: most changes go unannounced.
    static let leastAnnouncedShare = 0.25
    /// More than this share of the notifications brought in by recovery: Apple's sends mostly fail.
    static let mostRecoveredShare = 0.5

    /// The verdict for `app` from its reading (nil: nothing happened to it, nor came, in the window).
    public static func judge(app: String, _ reading: NotificationReading?) -> NotificationHealth {
        let (changes, notified, recovered) = (reading?.changes ?? 0, reading?.notified ?? 0, reading?.recovered ?? 0)
        let why: String
        let healthy: Bool
        if notified == 0 {
            (healthy, why) = (false, "no V2 notification arrived in the last 24 hours")
        } else if Double(notified) < leastAnnouncedShare * Double(changes) {
            (healthy, why) = (false, "only \(notified) V2 notifications for \(changes) changes in the last 24 hours")
        } else if Double(recovered) > mostRecoveredShare * Double(notified) {
            (healthy, why) = (false, "recovery brought in \(recovered) of the last 24 hours' \(notified) V2 notifications: Apple's sends do not reach serve")
        } else {
            (healthy, why) = (true, "\(notified) V2 notifications for \(changes) changes in the last 24 hours")
        }
        var verdict = NotificationHealth(app: app, notificationFirst: healthy, why: why, changes: changes, notified: notified)
        verdict.recovered = recovered
        verdict.freshnessP99Seconds = reading?.freshnessP99Seconds
        verdict.checksPerSubscription = reading.flatMap { $0.subscriptions > 0 ? Double($0.checks) / Double($0.subscriptions) : nil }
        return verdict
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
