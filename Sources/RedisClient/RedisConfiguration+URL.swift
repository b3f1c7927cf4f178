import Foundation

extension RedisConfiguration {
    /// Reads a configuration from a URL, in one of two forms:
    ///
    /// - `redis://[user][:password]@host[:port][/database]` (port 6379 and database 0 by default);
    /// - `unix:///path/to/redis.sock[?db=N][&user=NAME][&password=SECRET]`.
    ///
    /// Percent-encode reserved characters (`@ : / ? # & %`) in user names and passwords.
    /// Timeouts take their defaults; set them on the result. An unusable URL throws
    /// `RedisError.invalidConfiguration` naming the problem; the message never repeats the password.
    public init(url: String) throws(RedisError) {
        guard let components = URLComponents(string: url) else {
            // The text itself is not repeated: it may hold a password.
            throw .invalidConfiguration("the Redis URL cannot be parsed. \(Self.expectedForms)")
        }
        switch components.scheme?.lowercased() {
        case "redis":
            try self.init(tcpURL: components)
        case "unix":
            try self.init(unixSocketURL: components)
        case "rediss":
            // hiredis 0.14 has no TLS: the standard answer is a TLS sidecar next to each process.
            throw .invalidConfiguration(
                "rediss:// (TLS) cannot be spoken by this client (hiredis 0.14 has no TLS). Run a TLS sidecar "
                    + "(stunnel4: deploy/compose/stunnel-redis.conf, the worker's sidecar in deploy/kubernetes) and point "
                    + "redis-url at it: redis://:PASSWORD@127.0.0.1:6380/0 (docs/operations.md, \"TLS to Redis\").")
        case let scheme:
            throw .invalidConfiguration("the URL scheme '\(scheme ?? "")' is not supported. \(Self.expectedForms)")
        }
        try validate()
    }

    private static let expectedForms = "Expected redis://[user][:password]@host[:port][/database] "
        + "or unix:///path/to/redis.sock[?db=N&user=NAME&password=SECRET]."

    private init(tcpURL components: URLComponents) throws(RedisError) {
        guard var host = components.host, !host.isEmpty else {
            throw .invalidConfiguration("the Redis URL names no host. \(Self.expectedForms)")
        }
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }  // IPv6
        if let name = components.queryItems?.first?.name {
            throw .invalidConfiguration("redis:// URLs take no query parameters, found '\(name)'. \(Self.expectedForms)")
        }
        let databasePath = components.path.drop { $0 == "/" }
        guard let database = databasePath.isEmpty ? 0 : Int(databasePath) else {
            throw .invalidConfiguration("the URL path '\(components.path)' is not a database number")
        }
        self.init(
            endpoint: .tcp(host: host, port: components.port ?? 6379),
            username: components.user.flatMap { $0.isEmpty ? nil : $0 },
            password: components.password.flatMap { $0.isEmpty ? nil : $0 },
            database: database
        )
    }

    private init(unixSocketURL components: URLComponents) throws(RedisError) {
        guard components.host?.isEmpty ?? true, components.user == nil, components.password == nil else {
            throw .invalidConfiguration(
                "a unix:// URL takes the socket path after three slashes and credentials as query parameters. "
                    + Self.expectedForms)
        }
        var database = 0
        var username: String?
        var password: String?
        for item in components.queryItems ?? [] {
            switch item.name {
            case "db":
                guard let number = item.value.flatMap({ Int($0) }) else {
                    throw .invalidConfiguration("the db parameter '\(item.value ?? "")' is not a database number")
                }
                database = number
            case "user": username = item.value
            case "password": password = item.value
            default: throw .invalidConfiguration("unknown unix:// URL parameter '\(item.name)'. \(Self.expectedForms)")
            }
        }
        self.init(endpoint: .unixSocket(path: components.path), username: username, password: password, database: database)
    }
}
