import EventRelay
import Fleet
import Foundation
import TestSupport
import Testing

/// The relay as `receiptfleet relay` runs it (`ProcessRoot`'s relay services): its webhook threads and the cap per endpoint.
@Suite struct RelayServicesTests {
    @Test func aReceiverThatNeverAnswersHoldsOnlyItsCapOfTheRelaysWebhookThreads() async throws {
        try await Deployment.with(receipts: 6) { deployment in
            let hanging = try TestHTTPServer(.hold)
            defer { hanging.stop() }
            let healthy = try TestHTTPServer(.respond([.init(status: 204)]))
            defer { healthy.stop() }
            let database = deployment.database
            let events = try await onOwnThread {
                let connection = try database.connect()
                let registry = WebhookRegistry.local(connection)
                for receiver in [hanging, healthy] {
                    _ = try registry.add(url: "http://127.0.0.1:\(receiver.port)/", eventTypes: [])
                }
                return try connection.execute(
                    """
                    INSERT INTO events (id, subscription_id, original_transaction_id, type, payload, occurred_at)
                    SELECT gen_random_uuid(), id, original_transaction_id, 'renewed', '{}', now() FROM subscriptions
                    """)
            }
            #expect(events > 2)

            let held = try await RunningServices.relay(settings: deployment.settings, logger: quietLogger).whileRunning {
                // Well before the hanging requests time out (15 s).
                try await eventually(within: .seconds(10)) { healthy.requests.count >= events }
                let held = hanging.requests.count
                hanging.stop()  // ends the held requests, so the relay can stop
                return held
            }

            #expect(healthy.requests.count == events, "the healthy receiver got every event")
            #expect(held == deployment.settings.webhookEndpointConcurrency)
        }
    }
}
