import Foundation
import PostgresClient
import RedisClient
import TestSupport
import Testing

/// Managed Redis and PostgreSQL speak only TLS. `scripts/services` starts a Redis that listens
/// only on its tls-port, behind a stunnel4 client sidecar as deploy/ ships it, and offers TLS on
/// PostgreSQL, both with certificates from a throwaway test CA.
@Suite struct ManagedServiceTLSTests {
    static let environment = ProcessInfo.processInfo.environment
    static let testCA = environment["RECEIPTFLEET_TEST_CA"]
    static let sidecarURL = environment["RECEIPTFLEET_TLS_REDIS_URL"]
    static let tlsRedisPort = environment["RECEIPTFLEET_TLS_REDIS_PORT"].flatMap(Int.init)

    @Test(.enabled(if: testCA != nil && sidecarURL != nil && tlsRedisPort != nil,
                   "needs the TLS servers of scripts/services (scripts/test starts them)"))
    func theFleetRunsOnATLSOnlyRedisThroughItsSidecarAndOnPostgresWithVerifyFull() async throws {
        let (ca, sidecar, tlsPort) = (Self.testCA!, Self.sidecarURL!, Self.tlsRedisPort!)
        let nowMs = FleetEndToEndTests.nowMs
        try await TestDatabase.with { database in
            // That Redis speaks nothing but TLS: without the sidecar a client gets nowhere.
            await #expect(throws: RedisError.self) {
                try await onOwnThread {
                    var plain = try RedisConfiguration(url: "redis://:receiptfleet-dev@127.0.0.1:\(tlsPort)/0")
                    plain.connectTimeout = .seconds(2)
                    plain.commandTimeout = .seconds(2)
                    _ = try RedisConnection(plain).command("PING")
                }
            }

            // PostgreSQL with sslmode=verify-full: TLS, the chain to the test CA and the host checked.
            let verified = Self.verifyFull(database.url, rootCertificate: ca)
            let usesTLS = try await onOwnThread {
                try PostgresConnection(configuration: PostgresConfiguration(verified))
                    .query("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()").first?["ssl"].bool()
            }
            #expect(usesTLS == true)
            let stranger = try Self.unrelatedCA()
            let refused = await #expect(throws: PostgresError.self) {
                try await onOwnThread { _ = try PostgresConnection(configuration: PostgresConfiguration(Self.verifyFull(database.url, rootCertificate: stranger))) }
            }
            #expect("\(refused.map { "\($0)" } ?? "")".contains("certificate"), "the error says what failed")

            // The fleet end to end on both: every subscription verified, each state the truth.
            try await LiveSimulator.with(startMs: nowMs) { simulator in
                let setup = try FleetSetup(
                    database: database, simulator: simulator, nowMs: nowMs, receipts: 10, redisURL: sidecar, postgresURL: verified)
                let scheduled = try await setup.load(runID: "tls")
                let settled = try await setup.work()
                #expect(scheduled.enqueued == setup.subscriptions.count && settled.queue.dead == 0)
                #expect(try await setup.groundTruthMismatches() == [])
            }
        }
    }

    /// `url` with its sslmode replaced by verify-full against `rootCertificate`.
    static func verifyFull(_ url: String, rootCertificate: String) -> String {
        let base = url.split(separator: "?", maxSplits: 1)[0]
        return "\(base)?sslmode=verify-full&sslrootcert=\(rootCertificate)"
    }

    /// A CA of its own, which signed nothing the server presents.
    static func unrelatedCA() throws -> String {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(uniqueName("rf-ca"))
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let (status, output) = try runProgram("/usr/bin/openssl", [
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1",
            "-subj", "/CN=Not the server's CA", "-keyout", directory.appendingPathComponent("ca.key").path,
            "-out", directory.appendingPathComponent("ca.pem").path,
        ])
        try #require(status == 0, "openssl failed: \(output)")
        return directory.appendingPathComponent("ca.pem").path
    }
}
