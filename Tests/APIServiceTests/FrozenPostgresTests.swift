import Foundation
import Testing
import TestSupport

/// PostgreSQL frozen (as by SIGSTOP, behind a proxy so the shared server is untouched) under API
/// callers: nothing can be read or stored, and the API says so soon, with `Retry-After`, instead of
/// holding callers on lanes for the database's full deadline; it recovers by itself. Its bounds
/// leave room for the loaded parallel run it is part of, and still fail the 30 s callers waited before.
@Suite struct FrozenPostgresTests {
    @Test func withPostgreSQLFrozenReadsAndRegistrationsAnswerSoonAndRecover() async throws {
        let proxy = try FreezableProxy(forwardingTo: try #require(URLComponents(string: TestServers.postgresURL)?.port))
        defer { proxy.stop() }
        // The database's own deadline is long, so that the bounds below leave a loaded machine room
        // and still fail callers held for it.
        try await APIHarness.with(configureFleet: { fleet in
            fleet.postgresURL = proxy.carrying(fleet.postgresURL)
            fleet.postgresTimeout = .seconds(30)
        }) { api in
            let (_, id) = try await api.registered()
            proxy.freeze(forAtMost: .seconds(60))
            defer { proxy.thaw() }
            let answers = try await withThrowingTaskGroup(of: (Int, String?, Bool, Duration).self) { group in
                for caller in 0..<8 {
                    group.addTask {
                        let started = ContinuousClock.now
                        let reply = caller < 6
                            ? try await api.get("/v1/subscriptions/\(id)")
                            : try await api.post("/v1/receipts", ["receipt": api.receipt(index: caller).receiptData])
                        return (reply.status, reply.code, reply.headers["Retry-After"] != nil, started.duration(to: .now))
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(answers.allSatisfy { $0.0 == 503 && $0.1 == "database_unavailable" && $0.2 }, "\(answers)")
            // The lanes' deadline is 2 s; without it each lane held its callers for the database's 30 s, in turn.
            #expect(answers.allSatisfy { $0.3 < .seconds(10) }, "\(answers.map(\.3))")
            // During the rest a request is refused without a lane (`ServerRestTests` shows it without a
            // clock): the quickest of three, bounded well under the 30 s callers waited before. Not under the
            // lanes' 2 s deadline: in the loaded parallel run a refusal took 2.06 s.
            var quickest = Duration.seconds(60)
            for _ in 0..<3 {
                let started = ContinuousClock.now
                #expect(try await api.get("/v1/subscriptions/\(id)").code == "database_unavailable")
                quickest = min(quickest, started.duration(to: .now))
            }
            #expect(quickest < .seconds(5), "the quickest refusal took \(quickest)")
            proxy.thaw()
            let recovered = try await eventually(within: .seconds(15), every: .milliseconds(250)) {
                try await api.get("/v1/subscriptions/\(id)").status == 200
            }
            #expect(recovered)
        }
    }
}
