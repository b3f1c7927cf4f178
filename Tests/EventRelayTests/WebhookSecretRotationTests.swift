import EventRelay
import Foundation
import Lanes
import PostgresClient
import TestSupport
import Testing

/// Rotating an endpoint's signing secret while the dispatcher delivers: until the overlap ends,
/// every delivery carries a signature by each secret, so a receiver that knows only the old one
/// and a receiver that already switched both accept every delivery; afterwards only the new one signs.
@Suite struct WebhookSecretRotationTests {
    @Test func bothSecretsSignDuringTheOverlapAndOnlyTheNewOneAfter() async throws {
        let receiver = try TestHTTPServer(.respond([.init(status: 204)]))
        defer { receiver.stop() }
        let (old, new, overlapping) = try await World.with { world in
            let database = try world.connect()
            let registry = WebhookRegistry.local(database)
            let (endpoint, old) = try registry.add(url: "http://127.0.0.1:\(receiver.port)/hook", eventTypes: [])
            // The dispatcher keeps delivering in the background, as a relay process does.
            let stop = StopSignal()
            let dispatching = DispatchSemaphore(value: 0)
            Thread {
                defer { dispatching.signal() }
                guard let dispatcher = try? WebhookDispatcher(database: world.connect(), configuration: WebhookConfiguration.local()) else { return }
                dispatcher.run(until: stop)
            }.start()
            defer {
                stop.set()
                dispatching.wait()
            }
            let relay = try world.relay()
            func deliver(_ count: Int) throws {
                let before = receiver.requests.count
                for subscription in try insertSubscriptions(count, on: database) { try insertEvent(subscription, on: database) }
                try relay.runOnce()
                #expect(eventuallyOnThisThread { receiver.requests.count >= before + count }, "the dispatcher delivered them")
            }
            try deliver(3)
            // On a process clock ten days ahead (shifted-clock), the overlap runs from its reading,
            // which the dispatcher compares the overlap's end with, not from the database's.
            let ahead = Date().addingTimeInterval(10 * 86_400)
            let (new, until) = try registry.rotateSigningSecret(id: endpoint.id, overlap: .seconds(3_600), now: ahead)
            #expect(abs(until.timeIntervalSince(ahead) - 3_600) < 1)
            #expect(try registry.list().first?.previousSecretUntil == until)
            try deliver(3)
            let overlapping = receiver.requests.count
            // The overlap ends (as an hour later): only the new secret signs.
            try database.execute("UPDATE webhook_endpoints SET previous_secret_until = now() - interval '1 second'")
            #expect(try registry.list().first?.previousSecretUntil == nil)
            try deliver(3)
            return (old, new, overlapping)
        }
        let requests = receiver.requests
        #expect(requests.count == 9)
        func verdicts(_ secret: WebhookSecret) throws -> [String] {
            try requests.map { request in
                try pythonVerdict(secret: secret.text, id: request.headers["webhook-id"] ?? "", timestamp: request.headers["webhook-timestamp"] ?? "",
                                  signature: request.headers["webhook-signature"] ?? "", body: request.body)
            }
        }
        #expect(try verdicts(old) == Array(repeating: "valid", count: overlapping) + Array(repeating: "invalid", count: 3),
                "a receiver still on the old secret accepts everything until the overlap ends")
        #expect(try verdicts(new) == Array(repeating: "invalid", count: 3) + Array(repeating: "valid", count: 6),
                "a receiver that switched accepts everything from the rotation on")
        #expect(requests[3..<6].allSatisfy { ($0.headers["webhook-signature"] ?? "").split(separator: " ").count == 2 })
        #expect(requests[6...].allSatisfy { ($0.headers["webhook-signature"] ?? "").split(separator: " ").count == 1 })
    }
}
