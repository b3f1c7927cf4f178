import AppStore
@testable import Fleet
import FleetConfiguration
import Foundation
import JobQueue
import RedisClient
import TestSupport
import Testing

/// The fleet's timings: what each process timed (Apple's calls per endpoint, a job's time from
/// first enqueue to done) adds up in Redis, bucket by bucket, to the fleet's percentiles.
@Suite struct TimingsTests {
    /// A verifyReceipt exchange that went to Apple and took `latency`.
    static func exchange(_ latency: Duration, _ endpoint: AppleEndpoint = .verifyReceipt) -> VerificationExchange {
        VerificationExchange(environment: .production, outcome: .status(0, isRetryable: nil), httpStatus: 200, latency: latency, endpoint: endpoint)
    }

    @Test func twoProcessesTimingsAddUpToTheFleetsPercentiles() async throws {
        let settings = try FleetSettings.forTest(
            redisURL: TestServers.redisURL, postgresURL: TestServers.postgresURL, keyPrefix: "{\(uniqueName("timings"))}",
            rateLimit: try RateLimit(perSecond: 1, burst: 1))
        let (one, other) = (FleetMetrics(), FleetMetrics())
        // One process: 90 quick calls and 90 jobs of half a minute; a call it never sent counts for nothing.
        for _ in 0..<90 {
            one.answered(Self.exchange(.milliseconds(100)))
            one.finished(.verified, after: .seconds(30))
        }
        one.answered(.notSent(to: .verifyReceipt, in: .production))
        // The other: 10 slow calls, 10 jobs of an hour (retried through a pause), and a door's call to another endpoint.
        for _ in 0..<10 {
            other.answered(Self.exchange(.seconds(2)))
            other.finished(.verified, after: .seconds(3_600))
        }
        other.calledApple(.orderLookup, taking: .milliseconds(300))
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let (minutes, hours, later) = try await onOwnThread {
            let handle = { FleetTimings(connection: try RedisConnection(settings.redisConfiguration()), keys: try QueueKeys(prefix: settings.keyPrefix)) }
            try TimingsReporter.report(one, to: try handle(), at: Date(timeIntervalSince1970: Double(now) / 1000))
            try TimingsReporter.report(other, to: try handle(), at: Date(timeIntervalSince1970: Double(now) / 1000))
            // Nothing new: nothing is added twice.
            try TimingsReporter.report(one, to: try handle(), at: Date(timeIntervalSince1970: Double(now) / 1000))
            // A minute later one more call: the next minute's, and the same hour's.
            one.answered(Self.exchange(.milliseconds(100)))
            try TimingsReporter.report(one, to: try handle(), at: Date(timeIntervalSince1970: Double(now + 60_000) / 1000))
            let reader = try handle()
            return (try reader.read(.minute, last: 2, at: now + 60_000), try reader.read(.hour, last: 2, at: now + 60_000),
                    try reader.read(.minute, last: 1, at: now + 60_000))
        }
        let first = try #require(minutes.first?.timings)
        let calls = try #require(first[AppleEndpoint.verifyReceipt.rawValue])
        #expect(calls.count == 100)
        #expect(TimingHistogram.bucket(of: try #require(calls.quantile(0.5))) == TimingHistogram.bucket(of: .milliseconds(100)))
        #expect(TimingHistogram.bucket(of: try #require(calls.quantile(0.99))) == TimingHistogram.bucket(of: .seconds(2)))
        #expect(calls.mean == .milliseconds(290), "(90 × 100 ms + 10 × 2 s) / 100")
        let jobs = try #require(first[FleetTimings.jobs])
        #expect(jobs.count == 100)
        #expect(TimingHistogram.bucket(of: try #require(jobs.quantile(0.5))) == TimingHistogram.bucket(of: .seconds(30)))
        #expect(TimingHistogram.bucket(of: try #require(jobs.quantile(0.99))) == TimingHistogram.bucket(of: .seconds(3_600)))
        #expect(first[AppleEndpoint.orderLookup.rawValue]?.count == 1)
        #expect(later.map { $0.timings[AppleEndpoint.verifyReceipt.rawValue]?.count } == [1], "the next minute holds the next call")
        #expect(minutes.map(\.start) == [FleetTimings.Span.minute.start(of: now), FleetTimings.Span.minute.start(of: now) + 60_000])
        let hour = hours.reduce(TimingHistogram()) { $0.merged($1.timings[AppleEndpoint.verifyReceipt.rawValue] ?? TimingHistogram()) }
        #expect(hour.count == 101, "the hours hold every minute's calls")
    }

    @Test func aPercentileFallsInItsBucket() {
        var histogram = TimingHistogram()
        #expect(histogram.quantile(0.5) == nil && histogram.mean == nil)
        for milliseconds in 1...1_000 { histogram.record(.milliseconds(milliseconds)) }
        let (p50, p99) = (histogram.quantile(0.5)!, histogram.quantile(0.99)!)
        // Within the bucket (19 % wide) of 500 ms and of 990 ms.
        #expect(TimingHistogram.bucket(of: p50) == TimingHistogram.bucket(of: .milliseconds(500)), "\(p50)")
        #expect(TimingHistogram.bucket(of: p99) == TimingHistogram.bucket(of: .milliseconds(990)), "\(p99)")
        #expect(histogram.mean == .microseconds(500_500))
        #expect(TimingHistogram.bucket(of: .milliseconds(2)) == 4 && TimingHistogram.upperBound(of: 4) == .milliseconds(2))
        #expect(TimingHistogram.bucket(of: .seconds(86_400 * 365)) == TimingHistogram.lastBucket)
    }

    /// A worker process times every call it sends and every job it finishes, and reports them as it stops.
    @Test func aWorkerTimesItsCallsAndItsJobsForTheFleet() async throws {
        let nowMs = FleetEndToEndTests.nowMs
        try await TestDatabase.with { database in
            try await LiveSimulator.with(startMs: nowMs) { simulator in
                let setup = try FleetSetup(database: database, simulator: simulator, nowMs: nowMs, receipts: 20)
                let scheduled = try await setup.load()
                let final = try await setup.work { $0.queue.outstanding == 0 }
                #expect(final.queue.dead == 0)
                let settings = setup.settings
                let hours = try await onOwnThread {
                    try FleetTimings(connection: RedisConnection(settings.redisConfiguration()), keys: QueueKeys(prefix: settings.keyPrefix))
                        .read(.hour, last: 2, at: Int64(Date().timeIntervalSince1970 * 1000))
                }
                let total = hours.reduce(into: [String: TimingHistogram]()) { $0.merge($1.timings) { $0.merged($1) } }
                let jobs = try #require(total[FleetTimings.jobs])
                #expect(jobs.count == Int64(scheduled.enqueued), "every job done, once")
                #expect(try #require(jobs.quantile(0.99)) < .seconds(60))
                #expect(total[AppleEndpoint.verifyReceipt.rawValue]?.count == Int64(simulator.store.statistics.requestsTotal))
            }
        }
    }
}
