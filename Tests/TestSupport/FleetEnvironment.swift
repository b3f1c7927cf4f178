import EventRelay
import Fleet
import FleetConfiguration

extension FleetSettings {
    /// Where these settings point (servers, key prefix, Apple's endpoints) as the RECEIPTFLEET_*
    /// variables a `receiptfleet` process started by a test reads.
    public var processEnvironment: [String: String] {
        [
            Settings.redisURL.variable: redisURL,
            Settings.postgresURL.variable: postgresURL,
            Settings.keyPrefix.variable: keyPrefix,
            Settings.appstoreProductionURL.variable: endpoints.production,
            Settings.appstoreSandboxURL.variable: endpoints.sandbox,
            Settings.shiftedClock.variable: scriptClock == .shifted ? "true" : "false",
        ].merging(webhookEnvironment) { $1 }
    }

    /// The webhook settings `forLocalWebhooks` makes, for a process (the key only if it is the tests' key).
    private var webhookEnvironment: [String: String] {
        var environment: [String: String] = [:]
        if allowPrivateWebhooks { environment[Settings.allowPrivateWebhooks.variable] = "true" }
        if webhookSecretKeys?.current.id == WebhookKeyring.test.current.id {
            environment[Settings.webhookSecretKey.variable] = WebhookKeyring.testKeyText
        }
        return environment
    }
}

extension FleetSettings {
    /// These settings with the tests' webhook key, and webhooks allowed to reach the tests' receivers
    /// on loopback over plain http.
    public var forLocalWebhooks: FleetSettings {
        var settings = self
        settings.allowPrivateWebhooks = true
        settings.webhookSecretKeys = .test
        return settings
    }
}
