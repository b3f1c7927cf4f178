import EventRelay
import Foundation
import Lanes
import PostgresClient
import TestSupport

/// An endpoint with one published event whose delivery is pending.
struct PendingDelivery: Sendable {
    let endpointID: Int64
    let deliveryID: Int64
    let eventID: String
    let secret: WebhookSecret
}

/// Adds an endpoint for `url`, inserts an event and relays it, which creates the delivery.
func pendingDelivery(to url: String, in world: World, on database: PostgresConnection) throws -> PendingDelivery {
    let (endpoint, secret) = try WebhookRegistry.local(database).add(url: url, eventTypes: [])
    let subscription = try insertSubscriptions(1, on: database)[0]
    let eventID = try insertEvent(subscription, on: database)
    try world.relay().runOnce()
    let deliveryID = try firstRow(of: database.query(
        "SELECT id FROM webhook_deliveries WHERE endpoint_id = $1", [.int64(endpoint.id)]), "the delivery")["id"].int64() ?? 0
    return PendingDelivery(endpointID: endpoint.id, deliveryID: deliveryID, eventID: eventID, secret: secret)
}

/// Adds an endpoint for each URL, then `events` events (each of a subscription of its own) and relays
/// them, so that every endpoint has a pending delivery of each. Returns the endpoints' ids, in order.
func endpoints(_ urls: [String], withDeliveries events: Int, in world: World, on database: PostgresConnection) throws -> [Int64] {
    let registry = WebhookRegistry.local(database)
    let ids = try urls.map { try registry.add(url: $0, eventTypes: []).endpoint.id }
    for subscription in try insertSubscriptions(events, on: database) {
        try insertEvent(subscription, on: database)
    }
    try world.relay { $0.batchSize = events }.runOnce()
    return ids
}

/// Starts `count` dispatchers, as the relay's `WebhookDispatchers` service does: each on a thread of
/// its own with its own connection and HTTP client, delivering until stopped. `now` is every one's
/// clock; what goes wrong in their rounds is recorded in `errors`.
func startDispatchers(
    _ count: Int, in world: World, configuration: WebhookConfiguration = WebhookConfiguration.local(),
    now: @escaping @Sendable () -> Date = Date.init, errors: Recorder
) -> RunningDispatchers {
    let dispatchers = RunningDispatchers()
    for _ in 0..<count {
        dispatchers.finished.enter()
        Thread { [stop = dispatchers.signal] in
            do {
                try WebhookDispatcher(database: world.connect(), configuration: configuration, now: now)
                    .run(until: stop, onError: { errors.record("\($0)") })
            } catch {
                errors.record("\(error)")
            }
            dispatchers.finished.leave()
        }.start()
    }
    return dispatchers
}

/// Dispatcher threads a test started, and their stop.
final class RunningDispatchers: Sendable {
    let signal = StopSignal()
    let finished = DispatchGroup()

    /// Stops them and waits up to `grace` for their rounds to end.
    func stop(grace: Duration) {
        signal.set()
        _ = finished.wait(timeout: .now() + grace.seconds)
    }
}

/// Runs the dispatcher once at each offset from `clock`'s start (moving the clock there) and
/// describes what each run did: attempts made, then the delivery's state, attempts so far, and
/// its next attempt as seconds after the start.
func drive(
    _ dispatcher: WebhookDispatcher, delivery id: Int64, at offsets: [Int], clock: TestClock,
    on database: PostgresConnection
) throws -> [String] {
    let start = clock.now
    return try offsets.map { offset in
        clock.now = start + Double(offset)
        let made = try dispatcher.runOnce()
        let stored = try delivery(id, on: database)
        let next = Int(stored.nextAttemptAt.timeIntervalSince(start).rounded())
        return "t+\(offset): made \(made), \(stored.state) after \(stored.attempts), next t+\(next)"
    }
}

/// The statuses of the delivery's recorded attempts, oldest first (nil when no answer came).
func attemptStatuses(_ id: Int64, on database: PostgresConnection) throws -> [Int64?] {
    try database.query(
        "SELECT response_status FROM webhook_attempts WHERE delivery_id = $1 ORDER BY id", [.int64(id)]
    ).map { try $0["response_status"].int64() }
}

/// "valid" if Python's own hmac, hashlib and base64 find `signature` right for the request, as a
/// receiver following docs/webhooks.md would check it; "invalid" otherwise.
func pythonVerdict(secret: String, id: String, timestamp: String, signature: String, body: [UInt8]) throws -> String {
    let script = """
        import base64, hashlib, hmac, os, sys
        key = base64.b64decode(os.environ["WH_SECRET"].removeprefix("whsec_"))
        signed = f"{os.environ['WH_ID']}.{os.environ['WH_TIMESTAMP']}.".encode() + sys.stdin.buffer.read()
        expected = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
        given = [s.split(",", 1)[1] for s in os.environ["WH_SIGNATURE"].split(" ") if s.startswith("v1,")]
        print("valid" if any(hmac.compare_digest(expected, g) for g in given) else "invalid")
        """
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["python3", "-c", script]
    process.environment = ProcessInfo.processInfo.environment.merging(
        ["WH_SECRET": secret, "WH_ID": id, "WH_TIMESTAMP": timestamp, "WH_SIGNATURE": signature]) { $1 }
    let input = Pipe()
    let output = Pipe()
    process.standardInput = input
    process.standardOutput = output
    try process.run()
    input.fileHandleForWriting.write(Data(body))
    try input.fileHandleForWriting.close()
    let verdict = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return String(decoding: verdict, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        + (process.terminationStatus == 0 ? "" : " (python3 exited with \(process.terminationStatus))")
}

/// `date` as an HTTP date (IMF-fixdate), as a `Retry-After` header gives it.
func httpDate(_ date: Date) -> String {
    let formatter = DateFormatter()
    formatter.locale = Locale(identifier: "en_US_POSIX")
    formatter.timeZone = TimeZone(identifier: "GMT")
    formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
    return formatter.string(from: date)
}
