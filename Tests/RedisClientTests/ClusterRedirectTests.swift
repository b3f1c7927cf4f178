import RedisClient
import TestSupport
import Testing

/// A connection follows the cluster while its keys' slot is resharded and its master fails over.
@Suite struct ClusterRedirectTests {
    @Test(.enabled(if: TestCluster.fromEnvironment != nil, "needs the Redis cluster of scripts/services (scripts/test starts it)"))
    func aConnectionFollowsMovedAskAndAFailover() async throws {
        try await TestCluster.exclusively { cluster in try await onOwnThread {
            let tag = "{\(uniqueName("rfc"))}"
            let slot = try cluster.slot(of: tag)
            // The seed is one of three masters: most tags live elsewhere, and MOVED leads there.
            let connection = try cluster.connect()
            try connection.command("SET", "\(tag):kept", "before")
            #expect(try connection.command("GET", "\(tag):kept").string == "before")
            #expect(connection.configuration.endpoint == .tcp(host: "127.0.0.1", port: try cluster.master(of: slot)!.port))

            let target = try cluster.migrate(slot: slot) {
                // Mid-migration the moved key is only on the target (ASK), a new key goes there too.
                #expect(try connection.command("GET", "\(tag):kept").string == "before")
                try connection.command("SET", "\(tag):during", "migrating")
            }
            #expect(try connection.command("GET", "\(tag):during").string == "migrating")
            #expect(connection.configuration.endpoint == .tcp(host: "127.0.0.1", port: target.port))

            let promoted = try cluster.failOver(slot: slot)
            #expect(try connection.command("GET", "\(tag):kept").string == "before")
            #expect(connection.configuration.endpoint == .tcp(host: "127.0.0.1", port: promoted.port))
            try connection.command("DEL", "\(tag):kept", "\(tag):during")
        } }
    }
}
