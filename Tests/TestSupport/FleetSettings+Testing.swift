import AppStore
import FleetConfiguration
import Foundation
import JobQueue

extension FleetSettings {
    /// The registry's defaults, on these servers at this rate, with what else a test names: every
    /// value left out is the one a process without settings would run with.
    public static func forTest(
        redisURL: String, postgresURL: String, keyPrefix: String? = nil, endpoints: AppStoreEndpoints? = nil,
        sharedSecret: SharedSecret? = nil, rateLimit: RateLimit, retryPolicy: RetryPolicy? = nil, concurrency: Int? = nil,
        visibilityTimeout: Duration? = nil, drainGrace: Duration? = nil, redisTimeout: Duration? = nil,
        postgresTimeout: Duration? = nil, metricsAddress: MetricsAddress? = nil
    ) throws -> FleetSettings {
        var settings = try FleetSettings(.defaults)
        (settings.redisURL, settings.postgresURL, settings.rateLimit, settings.sharedSecret) = (redisURL, postgresURL, rateLimit, sharedSecret)
        if let keyPrefix { settings.keyPrefix = keyPrefix }
        if let endpoints { settings.endpoints = endpoints }
        if let retryPolicy { settings.retryPolicy = retryPolicy }
        if let concurrency { settings.concurrency = concurrency }
        if let visibilityTimeout { settings.visibilityTimeout = visibilityTimeout }
        if let drainGrace { settings.drainGrace = drainGrace }
        if let redisTimeout { settings.redisTimeout = redisTimeout }
        if let postgresTimeout { settings.postgresTimeout = postgresTimeout }
        if let metricsAddress { settings.metricsAddress = metricsAddress }
        return settings
    }
}
