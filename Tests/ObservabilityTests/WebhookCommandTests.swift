import EventRelay
import Fleet
import Foundation
import TestSupport
import Testing

/// The webhook settings as a `receiptfleet` process reads them, and what its commands and its relay do with them.
@Suite struct WebhookCommandTests {
    /// The environment's proxy (http_proxy and the like, set for the fleet's other traffic) is not
    /// used for webhooks: a relay process started with one delivers directly.
    @Test func aRelayProcessIgnoresTheEnvironmentsProxyForWebhooks() async throws {
        try await Deployment.with { deployment in
            let receiver = try TestHTTPServer(.respond([.init(status: 204)]))
            defer { receiver.stop() }
            let proxy = try TestHTTPServer(.respond([.init(status: 204)]))
            defer { proxy.stop() }
            let database = deployment.database
            try await onOwnThread {
                let connection = try database.connect()
                _ = try WebhookRegistry.local(connection).add(url: "http://127.0.0.1:\(receiver.port)/hook", eventTypes: [])
                try connection.execute("INSERT INTO subscriptions (original_transaction_id) VALUES ('proxy-1')")
                try connection.execute(
                    """
                    INSERT INTO events (id, subscription_id, original_transaction_id, type, payload, occurred_at)
                    SELECT gen_random_uuid(), id, original_transaction_id, 'renewed', '{}', now() FROM subscriptions
                    """)
            }
            let proxyURL = "http://127.0.0.1:\(proxy.port)"
            let relay = try FleetProcess(
                ["relay", "--metrics-address", "off"],
                environment: deployment.settings.processEnvironment.merging(
                    ["http_proxy": proxyURL, "https_proxy": proxyURL, "ALL_PROXY": proxyURL, "no_proxy": ""]) { $1 })
            try await eventually(every: .milliseconds(50)) { !receiver.requests.isEmpty || !proxy.requests.isEmpty }
            relay.send(SIGTERM)
            _ = try await relay.exitStatus(within: .seconds(30))
            #expect(receiver.requests.count == 1, "\(relay.log)")
            #expect(proxy.acceptedConnections == 0)
        }
    }

    @Test func addRefusesTheMetadataServiceNamingTheFlagAndConfigCheckShowsTheSettings() async throws {
        try await Deployment.with { deployment in
            let environment = deployment.settings.processEnvironment.merging(["RECEIPTFLEET_ALLOW_PRIVATE_WEBHOOKS": ""]) { $1 }
            let refused = try await runFleetCommand(["webhooks", "add", "http://169.254.169.254/latest/meta-data/"], environment: environment)
            #expect(refused.status != 0)
            #expect(refused.output.contains("169.254.169.254 is not a public internet address (link-local)"), "\(refused.output)")
            #expect(refused.output.contains("--allow-private-webhooks"))

            let check = try await runFleetCommand(["config", "check", "--allow-private-webhooks"], environment: environment)
            #expect(check.status == 0, "\(check.output)")
            #expect(check.output.contains("allow-private-webhooks".padding(toLength: 30, withPad: " ", startingAt: 0) + "yes"))
            #expect(check.output.contains("(flag --allow-private-webhooks)"))
            #expect(check.output.contains("set (masked): current key \(WebhookKeyring.test.current.id)"))
            #expect(!check.output.contains(WebhookKeyring.testKeyText))

            let badKey = try await runFleetCommand(
                ["config", "check"], environment: environment.merging(["RECEIPTFLEET_WEBHOOK_SECRET_KEY": "dG9vLXNob3J0"]) { $1 })
            #expect(badKey.status != 0)
            #expect(badKey.output.contains("configuration 'webhook-secret-key' (from environment RECEIPTFLEET_WEBHOOK_SECRET_KEY)"))
            #expect(!badKey.output.contains("dG9vLXNob3J0"))
        }
    }
}
