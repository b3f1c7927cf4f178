import AppStoreSimulator
import Foundation
import NIOCore
import TestSupport
import Testing

/// The moment every test fleet is centred on: 2025-11-20 09:00:00 UTC.
let anchorMs: Int64 = 1_763_629_200_000
let day: Int64 = 86_400_000

/// A simulator whose clock starts at `anchorMs`.
func makeSimulator(_ knobs: FaultKnobs = FaultKnobs()) throws -> SimulatedAppStore {
    try SimulatedAppStore(knobs: knobs, clock: SimulatorClock(startMs: anchorMs))
}

/// Runs `body` with a client of `simulator`, served on a free loopback port.
func withClient<Value: Sendable>(_ simulator: SimulatedAppStore,
                                 _ body: @Sendable (SimulatorClient) async throws -> Value) async throws -> Value {
    try await LiveSimulator.serving(simulator) { live in try await body(SimulatorClient(port: live.port)) }
}

/// Receipt `index` of seed 1, its lifecycle centred on `anchorMs`.
func receipt(_ kind: LifecycleKind, seed: UInt64 = 1, round: Int = 0) -> SimulatedReceipt {
    let index = LifecycleKind.allCases.firstIndex(of: kind)! + round * LifecycleKind.allCases.count
    return SimulatedReceipt(token: ReceiptToken(seed: seed, index: index, environment: kind.environment, anchorMs: anchorMs))
}

/// The JSON body Apple's verifyReceipt takes.
func requestBody(_ receiptData: String, password: String? = nil, excludeOld: Bool = false) -> ByteBuffer {
    var object: [String: Any] = ["receipt-data": receiptData, "exclude-old-transactions": excludeOld]
    if let password { object["password"] = password }
    return ByteBuffer(bytes: try! JSONSerialization.data(withJSONObject: object))
}

/// Posts to verifyReceipt and returns the HTTP response.
func verify(_ client: SimulatorClient, _ receiptData: String, sandbox: Bool = false,
            password: String? = nil, excludeOld: Bool = false) async throws -> SimulatorClient.Answer {
    try await client.execute(
        uri: sandbox ? "/sandbox/verifyReceipt" : "/verifyReceipt", method: .post,
        headers: [.contentType: "application/json"],
        body: requestBody(receiptData, password: password, excludeOld: excludeOld))
}

/// Posts and decodes the body as a JSON object (failing the test when it is not one).
func verifyJSON(_ client: SimulatorClient, _ receipt: SimulatedReceipt, password: String? = nil,
                excludeOld: Bool = false) async throws -> [String: Any] {
    let response = try await verify(client, receipt.receiptData, sandbox: receipt.token.environment == .sandbox,
                                    password: password, excludeOld: excludeOld)
    #expect(response.status == .ok)
    return try #require(jsonObject(response.body))
}

func jsonObject(_ buffer: ByteBuffer) -> [String: Any]? {
    (try? JSONSerialization.jsonObject(with: Data(buffer.readableBytesView))) as? [String: Any]
}

/// Sets the simulator clock through the control route.
func setClock(_ client: SimulatorClient, to milliseconds: Int64) async throws {
    let response = try await client.execute(
        uri: "/control/clock", method: .post, headers: [.contentType: "application/json"],
        body: ByteBuffer(string: #"{"now_ms": \#(milliseconds)}"#))
    #expect(response.status == .ok)
}

/// Reads `GET /stats`.
func fetchStats(_ client: SimulatorClient) async throws -> SimulatorStatistics {
    let response = try await client.execute(uri: "/stats", method: .get)
    return try JSONDecoder().decode(SimulatorStatistics.self, from: Data(response.body.readableBytesView))
}

/// Posts a JSON body to a control route.
@discardableResult
func control(_ client: SimulatorClient, _ path: String, _ json: String) async throws -> SimulatorClient.Answer {
    try await client.execute(uri: path, method: .post, headers: [.contentType: "application/json"],
                             body: ByteBuffer(string: json))
}

/// The status-0 answers for `receipt` at each moment from `start` through `end`, moving the clock
/// between them; moments before the first purchase (answered 21002) are left out.
func scan(_ client: SimulatorClient, _ receipt: SimulatedReceipt, from start: Int64, through end: Int64,
          every step: Int64) async throws -> [(now: Int64, json: [String: Any])] {
    var answers: [(now: Int64, json: [String: Any])] = []
    for now in stride(from: start, through: end, by: Int(step)) {
        try await setClock(client, to: now)
        let json = try await verifyJSON(client, receipt)
        if json["status"] as? Int == 0 { answers.append((now, json)) }
    }
    return answers
}

extension Dictionary where Key == String, Value == Any {
    var latestEntries: [[String: Any]] { self["latest_receipt_info"] as? [[String: Any]] ?? [] }
    var renewals: [[String: Any]] { self["pending_renewal_info"] as? [[String: Any]] ?? [] }
    /// A decimal string field as a number (Apple's `_ms` and id fields).
    func number(_ key: String) -> Int64? { (self[key] as? String).flatMap { Int64($0) } }
    func text(_ key: String) -> String? { self[key] as? String }
}

extension Array where Element == [String: Any] {
    /// The entry with the latest expiry.
    var newest: [String: Any]? { self.max { ($0.number("expires_date_ms") ?? 0) < ($1.number("expires_date_ms") ?? 0) } }
}
