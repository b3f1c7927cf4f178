import RedisClient
import Testing

@Suite("RedisConfiguration from URLs")
struct ConfigurationTests {
    @Test("a redis:// URL gives host, port, user, percent-decoded password and database")
    func tcpURL() throws {
        let configuration = try RedisConfiguration(url: "redis://worker:p%40ss%3Aword@cache.internal:6380/4")
        #expect(configuration.endpoint == .tcp(host: "cache.internal", port: 6380))
        #expect(configuration.username == "worker")
        #expect(configuration.password == "p@ss:word")
        #expect(configuration.database == 4)
        #expect(configuration.description == "redis://worker:***@cache.internal:6380/4")
    }

    @Test("port 6379, database 0 and no credentials by default; IPv6 hosts lose their brackets")
    func defaults() throws {
        let plain = try RedisConfiguration(url: "redis://localhost")
        #expect(plain == RedisConfiguration(endpoint: .tcp(host: "localhost", port: 6379)))
        #expect(plain.description == "redis://localhost:6379/0")

        let ipv6 = try RedisConfiguration(url: "redis://:secret@[::1]:7000/")
        #expect(ipv6.endpoint == .tcp(host: "::1", port: 7000))
        #expect(ipv6.username == nil)
        #expect(ipv6.description == "redis://:***@[::1]:7000/0")
    }

    @Test("a unix:// URL gives the socket path, and db, user and password from its query")
    func unixSocketURL() throws {
        let configuration = try RedisConfiguration(url: "unix:///run/redis/redis.sock?db=3&user=app&password=a%26b")
        #expect(configuration.endpoint == .unixSocket(path: "/run/redis/redis.sock"))
        #expect(configuration.database == 3)
        #expect(configuration.username == "app")
        #expect(configuration.password == "a&b")
        #expect(configuration.description == "unix:///run/redis/redis.sock?db=3&user=app&password=***")
    }

    @Test(
        "an unusable URL throws an error naming the problem, never the password",
        arguments: [
            ("http://:s3cret@host/0", "scheme 'http'"),
            ("rediss://:s3cret@host/0", "TLS sidecar (stunnel4"),
            ("redis://:s3cret@/0", "no host"),
            ("redis://:s3cret@host:abc/0", "cannot be parsed"),
            ("redis://:s3cret@host:0/0", "port 0"),
            ("redis://:s3cret@host/zero", "not a database number"),
            ("redis://:s3cret@host/-1", "negative"),
            ("redis://:s3cret@host/0?timeout=5", "'timeout'"),
            ("redis://user@host/0", "needs a password"),
            ("unix://:s3cret@/tmp/redis.sock", "query parameters"),
            ("unix:///tmp/redis.sock?db=two&password=s3cret", "not a database number"),
            ("unix:///tmp/redis.sock?pass=s3cret", "'pass'"),
            ("unix://?password=s3cret", "path is empty"),
        ]
    )
    func invalidURL(url: String, problem: String) throws {
        let error = try #require(throws: RedisError.self) { try RedisConfiguration(url: url) }
        guard case .invalidConfiguration = error else {
            Issue.record("expected .invalidConfiguration, got \(error)")
            return
        }
        #expect(error.description.contains(problem), "\(error)")
        #expect(!error.description.contains("s3cret"))
    }
}
