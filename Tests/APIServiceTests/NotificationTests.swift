import APIService
import AppStore
import Fleet
import Foundation
import TestSupport
import Ledger
import Logging
import Testing

/// POST /v1/notifications/apple: only Apple's notifications get in (V1 by the shared secret, V2
/// by a signature chaining to the trusted root), each once, as one high-priority job; the
/// worker then confirms with verifyReceipt and only then is the event written.
@Suite struct NotificationTests {
    static let path = APIHarness.notificationPath

    @Test func aValidV2NotificationQueuesOneHighPriorityJobAndTheWorkerConfirmsTheEvent() async throws {
        try await APIHarness.with { api in
            let (otid, id) = try await api.registered()
            let notification = try api.signedNotification(otid: otid)
            let first = try await api.post(Self.path, notification, auth: .none)
            #expect(first.status == 200)
            #expect(first.json["status"] as? String == "queued")
            #expect(try await api.streamLength(\.readyHigh) == 1, "one job, in the high-priority stream")
            #expect(try await api.streamLength(\.ready) == 0)

            let again = try await api.post(Self.path, notification, auth: .none)
            #expect(again.status == 200)
            #expect(again.json["status"] as? String == "duplicate")
            #expect(try await api.streamLength(\.readyHigh) == 1, "a re-sent notification adds no job")
            #expect(try await api.count("SELECT count(*) AS n FROM notifications") == 1)
            #expect(try await api.count("SELECT count(*) AS n FROM events") == 0, "nothing is announced before Apple confirms")

            // A month passes at Apple: the subscription renewed. The worker asks, and only then writes the event.
            api.simulator.store.clock.advance(byMs: 31 * 86_400_000)
            try await RunningServices.worker(settings: api.fleet, logger: Logger(label: "api-test-worker")).whileRunning {
                let renewed = "SELECT count(*) AS n FROM events WHERE type = 'renewed' AND subscription_id = \(id)"
                try await eventually(every: .milliseconds(200)) { try await api.count(renewed) > 0 }
                #expect(try await api.count(renewed) == 1)
                #expect(try await api.count("SELECT count(*) AS n FROM verifications WHERE run_id LIKE 'notification-%'") == 1)
            }
        }
    }

    /// A serve that dies after recording a notification, before its job is queued (or after
    /// queueing it, before noting so): Apple sends the notification again, and it is processed
    /// exactly once — one job, never "duplicate" with no job at all.
    @Test(arguments: [false, true])
    func aServeThatDiesMidIntakeLosesNoNotification(diedAfterQueueing: Bool) async throws {
        try await APIHarness.with { api in
            let (otid, id) = try await api.registered()
            let uuid = UUID().uuidString
            let fleet = api.fleet
            // What the dead serve left behind, by the same steps its intake takes.
            try await onOwnThread {
                let connections = try Connections(settings: fleet, consumer: "died")
                let recorded = try connections.ledger.record(NotificationRecord(
                    dedupeKey: "v2:\(uuid)", version: 2, notificationType: "DID_RENEW", meaning: "renewed",
                    originalTransactionID: otid, subscriptionID: Int64(id), outcome: .queued))
                #expect(recorded.jobPendingFor == Int64(id))
                if diedAfterQueueing {
                    let occurrence = "notification-\(recorded.id)"
                    try connections.queue.enqueue(subscriptionID: Int64(id), run: occurrence, reason: .notification, once: occurrence)
                }
            }
            let resent = try await api.post(Self.path, try api.signedNotification(otid: otid, uuid: uuid), auth: .none)
            #expect(resent.status == 200)
            #expect(resent.json["status"] as? String == "queued")
            #expect(try await api.streamLength(\.readyHigh) == 1, "exactly one job")
            #expect(try await api.count("SELECT count(*) AS n FROM notifications WHERE job_enqueued_at IS NOT NULL") == 1)

            let again = try await api.post(Self.path, try api.signedNotification(otid: otid, uuid: uuid), auth: .none)
            #expect(again.json["status"] as? String == "duplicate")
            #expect(try await api.streamLength(\.readyHigh) == 1)
        }
    }

    /// Apple signs every developer's notifications with one chain: a genuine signature for
    /// another app's bundle is still not ours to act on.
    @Test func aNotificationForAnotherAppIsRefusedAndLoggedOnce() async throws {
        let log = CapturedLog()
        try await APIHarness.with(log: log) { api in
            let (otid, _) = try await api.registered()
            let foreign = try await api.post(
                Self.path, try api.signedNotification(otid: otid, bundleID: "com.someone.else"), auth: .none)
            #expect(foreign.status == 401)
            #expect(foreign.code == "notification_unauthenticated")
            #expect(try await api.streamLength(\.readyHigh) == 0)
            #expect(try await api.count("SELECT count(*) AS n FROM notifications") == 0)
            let lines = log.text.split(separator: "\n").filter { $0.contains("com.someone.else") }
            #expect(lines.count == 1, "\(lines)")
        }
    }

    @Test func aTamperedV2NotificationIsRefusedAndCounted() async throws {
        try await APIHarness.with { api in
            let (otid, _) = try await api.registered()
            let genuine = try #require(try api.signedNotification(otid: otid)["signedPayload"] as? String)
            let parts = genuine.split(separator: ".").map(String.init)
            let forged = try JSONSerialization.data(withJSONObject: [
                "notificationType": "REFUND", "notificationUUID": UUID().uuidString, "data": ["environment": "Production"],
            ]).base64URL
            let tampered = try await api.post(Self.path, ["signedPayload": [parts[0], forged, parts[2]].joined(separator: ".")], auth: .none)
            #expect(tampered.status == 401)
            #expect(tampered.code == "notification_unauthenticated")

            // Signed correctly, but by a CA nobody configured.
            let stranger = try TestCA(name: "Somebody Else's Root")
            let foreign = try await api.post(Self.path, ["signedPayload": try stranger.sign([
                "notificationType": "REFUND", "notificationUUID": UUID().uuidString,
            ])], auth: .none)
            #expect(foreign.status == 401)

            #expect(api.counter("receiptfleet_api_notifications_total", [("version", "v2"), ("outcome", "unauthenticated")]) == 2)
            #expect(try await api.count("SELECT count(*) AS n FROM notifications") == 0)
            #expect(try await api.streamLength(\.readyHigh) == 0)
        }
    }

    @Test func aV1NotificationNeedsTheSharedSecret() async throws {
        try await APIHarness.with { api in
            let receipt = api.receipt()
            let otid = receipt.subscriptions[0].originalTransactionID
            var body: [String: Any] = [
                "notification_type": "DID_RENEW", "environment": "PROD", "password": "not-the-secret",
                "unified_receipt": [
                    "status": 0, "environment": "Production", "latest_receipt": receipt.receiptData,
                    "latest_receipt_info": [["original_transaction_id": otid, "transaction_id": otid, "expires_date_ms": "1"]],
                ],
            ]
            let wrong = try await api.post(Self.path, body, auth: .none)
            #expect(wrong.status == 401)
            #expect(wrong.code == "notification_unauthenticated")
            #expect(api.counter("receiptfleet_api_notifications_total", [("version", "v1"), ("outcome", "unauthenticated")]) == 1)
            #expect(try await api.count("SELECT count(*) AS n FROM subscriptions") == 0)

            // With the secret: a purchase nobody registered starts being watched, from the receipt Apple sent.
            body["password"] = APIHarness.sharedSecret
            let right = try await api.post(Self.path, body, auth: .none)
            #expect(right.status == 200)
            #expect(right.json["status"] as? String == "queued")
            #expect(try await api.count("SELECT count(*) AS n FROM subscriptions WHERE status = 'unverified'") == 1)
            #expect(try await api.streamLength(\.readyHigh) == 1)
            #expect(try await api.post(Self.path, body, auth: .none).json["status"] as? String == "duplicate")
            #expect(try await api.streamLength(\.readyHigh) == 1)
        }
    }

    @Test func notificationsForAnUnconfiguredEnvironmentAreAcknowledgedAndIgnored() async throws {
        try await APIHarness.with { api in
            let (otid, _) = try await api.registered()
            let sandbox = try await api.post(Self.path, try api.signedNotification(otid: otid, environment: "Sandbox"), auth: .none)
            #expect(sandbox.status == 200)
            #expect(sandbox.json["status"] as? String == "ignored_environment")
            #expect(try await api.streamLength(\.readyHigh) == 0)
        }
    }

    /// Every type re-verifies the subscription it names (verifyReceipt then says what changed); the
    /// row says what Apple means by it, or `unknown` for a type Apple adds later.
    @Test(arguments: [
        ("REFUND_REVERSED", "%reversed a refund%"), ("RENEWAL_EXTENDED", "%extended%renewal date%"),
        ("REFUND_DECLINED", "%declined a refund%"), ("GRACE_PERIOD_EXPIRED", "%grace period ended%"),
        ("A_TYPE_APPLE_ADDS_LATER", "unknown"),
    ])
    func v2TypesReVerifyTheirSubscriptionAndRecordWhatTheyMean(type: String, meaning: String) async throws {
        try await APIHarness.with { api in
            let (otid, id) = try await api.registered()
            let reply = try await api.post(Self.path, try api.signedNotification(otid: otid, type: type), auth: .none)
            #expect(reply.status == 200)
            #expect(reply.json["status"] as? String == "queued")
            #expect(try await api.streamLength(\.readyHigh) == 1)
            #expect(try await api.count("""
                SELECT count(*) AS n FROM notifications
                WHERE notification_type = '\(type)' AND subscription_id = \(id) AND meaning LIKE '\(meaning)'
                """) == 1)
        }
    }

    /// App Store Connect's test notification carries no transaction: answered, recorded, nothing queued.
    @Test func aTestNotificationIsRecordedAndQueuesNothing() async throws {
        try await APIHarness.with { api in
            let payload = try api.ca.sign([
                "notificationType": "TEST", "notificationUUID": UUID().uuidString, "version": "2.0", "signedDate": APIHarness.nowMs,
                "data": ["appAppleId": 1_234_567_890, "bundleId": "com.example.app", "bundleVersion": "42", "environment": "Production"],
            ])
            let reply = try await api.post(Self.path, ["signedPayload": payload], auth: .none)
            #expect(reply.status == 200)
            #expect(reply.json["status"] as? String == "no_subscription")
            #expect(try await api.count("""
                SELECT count(*) AS n FROM notifications
                WHERE notification_type = 'TEST' AND meaning LIKE 'a test%' AND subscription_id IS NULL AND job_enqueued_at IS NULL
                """) == 1)
            #expect(try await api.streamLength(\.readyHigh) == 0)
            #expect(try await api.streamLength(\.ready) == 0)
        }
    }

    @Test func theTrustedRootIsReadFromPEMOrDER() throws {
        let ca = try TestCA()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(uniqueName("roots"))
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let pem = directory.appendingPathComponent("roots.pem")
        let der = directory.appendingPathComponent("root.cer")
        let other = try TestCA(name: "Second Root").root
        try (ca.root.serializeAsPEM().pemString + "\n" + other.serializeAsPEM().pemString).write(to: pem, atomically: true, encoding: .utf8)
        try Data(ca.root.serializeAsPEM().derBytes).write(to: der)
        #expect(try AppleRootCertificate.certificates(inFile: pem.path) == [ca.root, other])
        #expect(try AppleRootCertificate.certificates(inFile: der.path) == [ca.root])
        #expect(throws: CertificateFileError.self) { try AppleRootCertificate.certificates(inFile: directory.appendingPathComponent("none").path) }
    }
}
