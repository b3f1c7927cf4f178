import Fleet

extension FleetSettings {
    /// Where these settings point (servers, key prefix, Apple's endpoints) as the RECEIPTFLEET_*
    /// variables a `receiptfleet` process started by a test reads.
    public var processEnvironment: [String: String] {
        [
            "RECEIPTFLEET_REDIS_URL": redisURL,
            "RECEIPTFLEET_POSTGRES_URL": postgresURL,
            "RECEIPTFLEET_KEY_PREFIX": keyPrefix,
            "RECEIPTFLEET_APPSTORE_PRODUCTION_URL": endpoints.production,
            "RECEIPTFLEET_APPSTORE_SANDBOX_URL": endpoints.sandbox,
        ]
    }
}
