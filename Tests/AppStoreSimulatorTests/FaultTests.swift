import AppStoreSimulator
import Foundation
import HTTPTypes
import NIOCore
import Testing

@Suite("Fault knobs and statistics")
struct FaultTests {
    @Test("an outage answers 21005 for its length, then the service recovers")
    func outage() async throws {
        let simulator = try makeSimulator()
        try await withClient(simulator) { client in
            let renewing = receipt(.renewing).receiptData
            let started = try await control(client, "/control/outage", #"{"seconds": 30}"#)
            #expect(started.status == .ok)
            for _ in 0..<3 {
                #expect(String(buffer: try await verify(client, renewing).body) == #"{"status":21005}"#)
            }
            try await control(client, "/control/clock", #"{"advance_seconds": 31}"#)
            #expect(jsonObject(try await verify(client, renewing).body)?["status"] as? Int == 0)
            let stats = try await fetchStats(client)
            #expect(stats.byStatus == ["21005": 3, "0": 1])
        }
    }

    @Test("every call to Apple's endpoints is counted by endpoint, both environments, the simulator's own routes not")
    func callsByEndpoint() async throws {
        let simulator = try makeSimulator()
        try await withClient(simulator) { client in
            let renewing = receipt(.renewing).receiptData
            _ = try await verify(client, renewing)
            _ = try await verify(client, renewing, sandbox: true)
            _ = try await client.execute(uri: "/inApps/v1/subscriptions/1000000000000001", method: .get)
            _ = try await client.execute(uri: "/sandbox/inApps/v2/history/1000000000000001", method: .get)
            _ = try await client.execute(uri: "/inApps/v1/subscriptions/extend/mass", method: .post)
            try await control(client, "/control/clock", #"{"advance_seconds": 1}"#)
            let stats = try await fetchStats(client)
            #expect(stats.byEndpoint == ["verify_receipt": 2, "subscription_statuses": 1, "transaction_history": 1, "mass_extension": 1])
        }
    }

    @Test("requests beyond the rate limit in one second are counted, and still answered")
    func rateLimit() async throws {
        let simulator = try makeSimulator(FaultKnobs(rateLimit: 10))
        try await withClient(simulator) { client in
            let renewing = receipt(.renewing).receiptData
            let statuses = try await withThrowingTaskGroup(of: Int?.self) { group in
                for _ in 0..<25 {
                    group.addTask { jsonObject(try await verify(client, renewing).body)?["status"] as? Int }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(statuses == Array(repeating: 0, count: 25))
            var stats = try await fetchStats(client)
            #expect(stats.requestsTotal == 25)
            #expect(stats.rateLimit == 10)
            // All 25 come within a second on an idle machine; on a loaded one some spill into the
            // next, which lowers both figures alike: every request past the 10th of its second counts.
            let busiest = stats.maxRequestsInOneSecond
            #expect(busiest > 10 && busiest <= 25)
            #expect(stats.rateLimitViolations >= busiest - 10 && stats.rateLimitViolations <= 15)
            let violations = stats.rateLimitViolations

            // A second later the window is empty again: a few more requests break no limit. (Real
            // time: the simulator counts requests per second of the wall clock, as Apple does.)
            try await Task.sleep(for: .milliseconds(1100))
            for _ in 0..<5 { _ = try await verify(client, renewing) }
            stats = try await fetchStats(client)
            #expect(stats.rateLimitViolations == violations)
            #expect(stats.maxRequestsInOneSecond == busiest)
            #expect(stats.byEnvironment == ["Production": 30])

            try await control(client, "/control/reset-stats", "{}")
            stats = try await fetchStats(client)
            #expect(stats.requestsTotal == 0 && stats.rateLimitViolations == 0 && stats.maxRequestsInOneSecond == 0)
        }
    }

    @Test("503 pages and garbage bodies come at roughly their configured rates")
    func garbageAndServiceUnavailable() async throws {
        let simulator = try makeSimulator()
        try await withClient(simulator) { client in
            let set = try await control(client, "/control/knobs", #"{"http_503_rate": 0.2, "garbage_rate": 0.3}"#)
            #expect(set.status == .ok)
            let requests = 600
            var serviceUnavailable = 0
            var unusable = 0
            var valid = 0
            for _ in 0..<requests {
                let response = try await verify(client, receipt(.renewing).receiptData)
                if response.status == .serviceUnavailable {
                    serviceUnavailable += 1
                    #expect(String(buffer: response.body).contains("<html>"))
                } else if let json = jsonObject(response.body), json["status"] as? Int == 0, response.status == .ok {
                    valid += 1
                } else {
                    unusable += 1  // HTML 502, truncated JSON, or JSON with the wrong types
                }
            }
            // Expected 120 and 180; five standard deviations either side.
            #expect((70...170).contains(serviceUnavailable), "\(serviceUnavailable) HTTP 503 of \(requests)")
            #expect((120...240).contains(unusable), "\(unusable) garbage bodies of \(requests)")
            #expect(serviceUnavailable + unusable + valid == requests)
            let stats = try await fetchStats(client)
            #expect(stats.garbageBodies == unusable)
            #expect(stats.byHTTPStatus["503"] == serviceUnavailable)
        }
    }

    @Test("a share of receipts gets garbage on every request, the same receipts each time")
    func garbageReceipts() async throws {
        let simulator = try makeSimulator()
        try await withClient(simulator) { client in
            #expect(try await control(client, "/control/knobs", #"{"garbage_receipt_share": 0.5}"#).status == .ok)
            let receipts = (0..<40).map { receipt(.renewing, round: $0) }
            func broken() async throws -> [Bool] {
                var broken: [Bool] = []
                for receipt in receipts {
                    let response = try await verify(client, receipt.receiptData)
                    #expect(response.status == .ok, "garbage behind an HTTP 200, as a broken cache serves it")
                    broken.append(jsonObject(response.body)?["status"] as? Int != 0)
                }
                return broken
            }
            let first = try await broken()
            #expect(try await broken() == first, "a retry meets the same answer")
            #expect((8...32).contains(first.filter { $0 }.count), "\(first.filter { $0 }.count) of 40 broken")
            #expect(try await fetchStats(client).garbageBodies == 2 * first.filter { $0 }.count)
            #expect(try await control(client, "/control/knobs", #"{"garbage_receipt_share": 0}"#).status == .ok)
            #expect(try await broken().allSatisfy { !$0 }, "off again")
        }
    }

    @Test("rates that cannot hold together are refused")
    func invalidKnobs() async throws {
        let simulator = try makeSimulator()
        try await withClient(simulator) { client in
            let response = try await control(client, "/control/knobs", #"{"http_503_rate": 0.7, "garbage_rate": 0.6}"#)
            #expect(response.status == .badRequest)
            #expect(String(buffer: response.body).contains("add up to at most 1"))
            #expect(simulator.knobs == FaultKnobs())
        }
        #expect(throws: KnobsError.self) { try SimulatedAppStore(knobs: FaultKnobs(unavailableRate: 1.5)) }
    }

    @Test("the drop and reset knobs are set and shown, and count toward the rates' sum")
    func connectionFaultKnobs() async throws {
        let simulator = try makeSimulator()
        try await withClient(simulator) { client in
            let set = try await control(client, "/control/knobs", #"{"drop_rate": 0.25, "reset_rate": 0.5}"#)
            #expect(set.status == .ok)
            #expect(jsonObject(set.body)?["drop_rate"] as? Double == 0.25)
            #expect(jsonObject(set.body)?["reset_rate"] as? Double == 0.5)
            #expect(simulator.knobs == FaultKnobs(dropRate: 0.25, resetRate: 0.5))
            let tooMuch = try await control(client, "/control/knobs", #"{"garbage_rate": 0.5}"#)
            #expect(tooMuch.status == .badRequest)
            #expect(String(buffer: tooMuch.body).contains("add up to at most 1"))
        }
    }

    @Test("the latency knob delays answers")
    func latency() async throws {
        let simulator = try makeSimulator()
        try await withClient(simulator) { client in
            let clock = ContinuousClock()
            let renewing = receipt(.renewing).receiptData
            try await control(client, "/control/knobs", #"{"latency": "1s±20ms"}"#)
            let slow = try await clock.measure { _ = try await verify(client, renewing) }
            #expect(slow >= .milliseconds(980))
            try await control(client, "/control/knobs", #"{"latency": "0ms"}"#)
            // Against the slow one: a loaded machine adds its own wait to both answers alike; the quickest of
            // three, so that one stall of the machine (other suites start processes) is not taken for the knob.
            var fast = Duration.seconds(60)
            for _ in 0..<3 { fast = min(fast, try await clock.measure { _ = try await verify(client, renewing) }) }
            #expect(fast < slow - .milliseconds(700), "\(fast) against \(slow)")
        }
        #expect(Latency(parsing: "150ms±50ms") == Latency(meanMs: 150, spreadMs: 50))
        #expect(Latency(parsing: "1.5s+-200ms") == Latency(meanMs: 1500, spreadMs: 200))
        #expect(Latency(parsing: "soon") == nil)
    }

    @Test("verifyReceipt, the sandbox redirect and stats together", .timeLimit(.minutes(1)))
    func live() async throws {
        let simulator = try makeSimulator()
        try await withClient(simulator) { client in
            let json = try await verifyJSON(client, receipt(.renewing))
            #expect(json["status"] as? Int == 0)
            let redirected = try await verify(client, receipt(.sandbox).receiptData)
            #expect(String(buffer: redirected.body) == #"{"status":21007}"#)
            #expect(try await verifyJSON(client, receipt(.sandbox))["environment"] as? String == "Sandbox")
            let stats = try await fetchStats(client)
            #expect(stats.requestsTotal == 3)
            #expect(stats.byEnvironment == ["Production": 2, "Sandbox": 1])
            #expect(stats.byStatus == ["0": 2, "21007": 1])
        }
    }
}
