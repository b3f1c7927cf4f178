import Foundation

/// Request a Test Notification (`POST /inApps/v1/notifications/test`) and Get Test Notification
/// Status (`GET /inApps/v1/notifications/test/{testNotificationToken}`) as Apple answers them: a
/// TEST notification is sent to the server URL (the one `POST /control/notifications` set; none
/// answers 404 4040007), and its status is its signed payload with Apple's attempts to send it.
enum TestNotificationEndpoint {
    /// The TEST notification for `app`, and the token its status is asked with.
    static func make(app: String, environment: SimulatedEnvironment, nowMs: Int64, signing: SimulatorSigningChain)
        -> (token: String, uuid: String, signedPayload: String)
    {
        let uuid = UUID().uuidString.lowercased()
        var json = JSONWriter(capacity: 512)
        json.beginObject()
        json.string("notificationType", "TEST")
        json.string("notificationUUID", uuid)
        json.beginObject("data")
        json.number("appAppleId", Catalog.appItemID)
        json.string("bundleId", app)
        json.string("environment", environment.rawValue)
        json.endObject()
        json.string("version", "2.0")
        json.number("signedDate", nowMs)
        json.endObject()
        return ("\(uuid)_\(nowMs)", uuid, signing.sign(json.finish()))
    }

    static func requested(token: String) -> ServerAPIEndpoint.Answer {
        var json = JSONWriter(capacity: 96)
        json.beginObject()
        json.string("testNotificationToken", token)
        json.endObject()
        return ServerAPIEndpoint.Answer(httpStatus: 200, body: json.finish())
    }

    static let noServerURL = ServerAPIEndpoint.error(404, 4_040_007, "Server notification URL not found.")

    static func status(token: String, sender: NotificationSender) -> ServerAPIEndpoint.Answer {
        guard token.contains("_") else { return ServerAPIEndpoint.error(400, 4_000_020, "Invalid test notification token.") }
        guard let test = sender.test(token) else { return ServerAPIEndpoint.error(404, 4_040_008, "Test notification not found.") }
        var json = JSONWriter(capacity: 2048)
        json.beginObject()
        json.string("signedPayload", test.signedPayload)
        json.sendAttempts(sender.attempts(of: test.uuid))
        json.endObject()
        return ServerAPIEndpoint.Answer(httpStatus: 200, body: json.finish())
    }
}
