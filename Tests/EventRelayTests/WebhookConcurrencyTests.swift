import EventRelay
import Foundation
import Lanes
import PostgresClient
import TestSupport
import Testing

/// One receiver that stops answering must not slow the others. This suite measures time, so
/// scripts/test runs it after the others, alone (its name is in the `timed` pattern there).
@Suite struct WebhookConcurrencyTests {
    /// Deliveries to the healthy endpoint in each run: enough for the rate to outweigh thread start-up.
    private static let events = 400

    @Test func aHealthyEndpointIsServedAsFastBesideOneThatNeverAnswers() async throws {
        let besideHealthy = try await healthyRate(besideReceiverThat: .respond([.init(status: 204)]))
        let besideStalled = try await healthyRate(besideReceiverThat: .hold)
        print("webhook deliveries/s to a healthy endpoint: \(Int(besideHealthy)) beside a healthy one, "
            + "\(Int(besideStalled)) beside one that never answers")
        #expect(besideStalled >= 0.7 * besideHealthy, "\(besideStalled)/s against \(besideHealthy)/s")
    }

    /// Deliveries per second that a healthy endpoint receives while another endpoint, with as
    /// many deliveries, behaves as `other`; with the relay's default threads and cap per endpoint.
    private func healthyRate(besideReceiverThat other: TestHTTPServer.Behavior) async throws -> Double {
        let otherReceiver = try TestHTTPServer(other)
        defer { otherReceiver.stop() }
        let healthy = try TestHTTPServer(.respond([.init(status: 204)]))
        defer { healthy.stop() }
        let events = Self.events
        let errors = Recorder()
        let elapsed = try await World.with { world in
            let database = try world.connect()
            _ = try endpoints(
                ["http://127.0.0.1:\(otherReceiver.port)/", "http://127.0.0.1:\(healthy.port)/"], withDeliveries: events,
                in: world, on: database)
            let started = ContinuousClock.now
            let dispatchers = startDispatchers(8, in: world, errors: errors)
            defer {
                otherReceiver.stop()
                dispatchers.stop(grace: .seconds(30))
            }
            guard eventuallyOnThisThread(within: .seconds(120), { healthy.requests.count >= events }) else {
                throw Unfinished(received: healthy.requests.count)
            }
            return ContinuousClock.now - started
        }
        #expect(errors.all.isEmpty, "\(errors.all)")
        return Double(events) / elapsed.seconds
    }

    private struct Unfinished: Error {
        let received: Int
    }
}
