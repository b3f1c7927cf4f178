import Crypto
import Foundation
import JobQueue
import RedisClient

/// What the console keeps in Redis, so that every `serve` replica shows the same page: operators'
/// sessions, and samples of the fleet's status: the latest few (Apple's request rate now) and a
/// week of one a minute (the charts). Blocking: used on a lane.
///
/// Keys (all under the deployment's hash tag, so they work on Redis Cluster):
///   PREFIX:console:session:SHA256(ID)   a session: "OPERATOR CSRF MARK", expiring with the session
///   PREFIX:console:samples              sorted set of samples, scored by their time bucket (ms): the last three, every few seconds
///   PREFIX:console:minutes              the same, one a minute, for a week: the history charts
///   PREFIX:console:login-failures:ADDR  wrong logins from one address, expiring with their window
struct ConsoleStore {
    let connection: RedisConnection
    let prefix: String

    // MARK: Sessions

    /// A logged-in operator: who, the token every form of theirs must carry back, and the mark of
    /// the operator token that opened it (`NamedTokens.mark`): the session lasts only while that
    /// token is configured.
    struct Session: Sendable, Equatable {
        var operatorName: String
        var csrfToken: String
        var tokenMark: String
    }

    /// Starts a session for `operatorName`; returns its id (the cookie's value), which is stored
    /// only as its SHA-256 digest, so that Redis's contents do not let anyone in.
    func startSession(for operatorName: String, tokenMark: String, lifetime: Duration) throws -> (id: String, session: Session) {
        let id = Self.randomToken()
        let session = Session(operatorName: operatorName, csrfToken: Self.randomToken(), tokenMark: tokenMark)
        try connection.command(
            "SET", sessionKey(id), "\(session.operatorName) \(session.csrfToken) \(session.tokenMark)", "PX", lifetime.wholeMilliseconds)
        return (id, session)
    }

    /// The session with this id, or nil when it never was, has expired or was ended. (One stored
    /// without a token's mark, by a version before sessions were bound to tokens, is none.)
    func session(id: String) throws -> Session? {
        guard Self.isToken(id), let value = try connection.command("GET", sessionKey(id)).string else { return nil }
        let parts = value.split(separator: " ").map(String.init)
        guard parts.count == 3 else { return nil }
        return Session(operatorName: parts[0], csrfToken: parts[1], tokenMark: parts[2])
    }

    func endSession(id: String) throws {
        guard Self.isToken(id) else { return }
        try connection.command("DEL", sessionKey(id))
    }

    private func sessionKey(_ id: String) -> String {
        "\(prefix):console:session:" + SHA256.hash(data: Array(id.utf8)).map { String(format: "%02x", $0) }.joined()
    }

    /// 32 random bytes, hex: a session id or a CSRF token.
    static func randomToken() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
    }

    static func isToken(_ text: String) -> Bool {
        text.utf8.count == 64 && text.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
    }

    // MARK: Confirmations

    /// A confirmation for one action shown on a confirmation page: the page's form carries it, and
    /// the action is done only by the first post that uses it, so a form sent twice (a double
    /// click, a retried request) acts once.
    func issueConfirmation(lifetime: Duration) throws -> String {
        let token = Self.randomToken()
        try connection.command("SET", confirmationKey(token), "1", "PX", lifetime.wholeMilliseconds)
        return token
    }

    /// Whether `token` was issued and not used yet; uses it.
    func useConfirmation(_ token: String) throws -> Bool {
        guard Self.isToken(token) else { return false }
        return try connection.command("DEL", confirmationKey(token)).int == 1
    }

    private func confirmationKey(_ token: String) -> String { "\(prefix):console:confirmation:\(token)" }

    // MARK: Wrong logins

    /// Takes one of the `limit` login tries `address` has in a window, fleet-wide, before its token
    /// is even looked at: the check and the count are one step, so a hundred tries at once get
    /// `limit` answers, not a hundred. Returns the tries taken so far, or how long the address must
    /// wait when it has none left. A login that succeeds gives its try back (`returnLoginTry`).
    func takeLoginTry(from address: String, limit: Int, window: Duration) throws -> (taken: Int, refusedFor: Duration?) {
        let reply = try connection.run(
            Self.takeLoginTryScript, keys: [loginTriesKey(address)], arguments: [window.wholeMilliseconds, limit])
        guard let parts = reply.array, parts.count == 2, let allowed = parts[0].int, let value = parts[1].int else {
            throw RedisError.server("unexpected reply to the login tries script: \(reply)")
        }
        return allowed == 1 ? (Int(value), nil) : (limit + 1, .milliseconds(max(1_000, value)))
    }

    /// A login that succeeded: its try does not count against the address.
    func returnLoginTry(from address: String) throws {
        _ = try connection.command("DECR", loginTriesKey(address))
    }

    private func loginTriesKey(_ address: String) -> String { "\(prefix):console:login-tries:\(LoginAddress.bucket(address))" }

    /// KEYS[1]  the address's login tries in the window
    /// ARGV[1]  the window, in ms
    /// ARGV[2]  the tries a window allows
    /// Returns {1, tries taken} while the address may try, else {0, ms until the window ends}. The
    /// first try of a window starts its expiry in the same step, so a count never outlives it.
    static let takeLoginTryScript = RedisScript("""
        local tries = redis.call('INCR', KEYS[1])
        if tries == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
        if tries > tonumber(ARGV[2]) then return {0, redis.call('PTTL', KEYS[1])} end
        return {1, tries}
        """)

    // MARK: Samples

    /// The two series of samples: every few seconds, the last three (the request rate now), and one a minute
    /// for a week (the history: about 120 bytes a sample, so 170 KB a day and 1.2 MB a week).
    enum Series: String {
        case samples, minutes

        static let minuteKept = Duration.seconds(7 * 86_400 + 3_600)
        /// How many intervals of few-second samples are kept: the latest two give the rate now.
        static let samplesKept = 3
    }

    private func key(_ series: Series) -> String { "\(prefix):console:\(series.rawValue)" }

    /// Adds `figures` to `series` as the sample of the current bucket of `interval` unless a replica
    /// already did, and drops samples older than `keep`. The bucket comes from Redis's clock, so
    /// replicas with skewed clocks still agree. Returns whether it was added.
    @discardableResult
    func addSample(_ figures: ConsoleSample.Figures, to series: Series = .samples, interval: Duration, keep: Duration) throws -> Bool {
        try connection.run(
            Self.addSampleScript, keys: [key(series)],
            arguments: [interval.wholeMilliseconds, keep.wholeMilliseconds, figures.text]).int == 1
    }

    /// The samples of `series` in the last `window`, oldest first.
    func samples(_ series: Series = .samples, within window: Duration) throws -> [ConsoleSample] {
        let now = try connection.command("TIME").array?.first?.string.flatMap { Int64($0) } ?? 0
        let reply = try connection.command("ZRANGEBYSCORE", key(series), (now * 1000) - window.wholeMilliseconds, "+inf", "WITHSCORES")
        guard let flat = reply.array else { return [] }
        return stride(from: 0, to: flat.count - 1, by: 2).compactMap { index in
            guard let member = flat[index].string, let at = flat[index + 1].string.flatMap(Double.init) else { return nil }
            return ConsoleSample(at: Int64(at), member: member)
        }
    }

    /// KEYS[1]  the samples' sorted set
    /// ARGV[1]  the bucket width in ms; ARGV[2] how long samples are kept, in ms; ARGV[3] the sample's figures
    /// Adds ARGV[3] scored by the current bucket (Redis's clock), member "BUCKET|FIGURES", unless the
    /// bucket has a sample already; removes samples older than ARGV[2]. Returns 1 if it added, else 0.
    static let addSampleScript = RedisScript("""
        local clock = redis.call('TIME')
        local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
        local width = tonumber(ARGV[1])
        local bucket = now - (now % width)
        redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. string.format('%d', now - tonumber(ARGV[2])))
        if redis.call('ZCOUNT', KEYS[1], bucket, bucket) > 0 then return 0 end
        local text = string.format('%d', bucket)
        redis.call('ZADD', KEYS[1], text, text .. '|' .. ARGV[3])
        return 1
        """)
}

/// The fleet at one moment, as the charts need it: when (the bucket, by Redis's clock), and what.
struct ConsoleSample: Sendable, Equatable {
    /// The bucket's start, ms since the epoch.
    var at: Int64
    var figures: Figures

    /// What a sample records.
    struct Figures: Sendable, Equatable {
        var ready: Int
        var reserved: Int
        var delayed: Int
        var dead: Int
        /// Counters (their rates between two samples are what the charts draw): tokens the
        /// fleet-wide limiter granted (Apple's request rate), jobs acked, retried and buried, ever.
        var tokensGranted: Int64
        var done: Int64
        var retried: Int64
        var died: Int64
        /// Apple's answers in the minute before the sample, by status ("0", "21005", "none", …).
        var answers: [String: Int]

        /// Jobs not yet settled: the chart's queue depth.
        var depth: Int { ready + reserved + delayed }

        /// "ready reserved delayed dead granted done retried died|status:count,…", as stored after the bucket.
        var text: String {
            "\(ready) \(reserved) \(delayed) \(dead) \(tokensGranted) \(done) \(retried) \(died)|"
                + answers.sorted { $0.key < $1.key }.map { "\($0.key):\($0.value)" }.joined(separator: ",")
        }
    }

    /// Reads a stored member ("BUCKET|FIGURES") scored `at`; nil when it is not one (a sample of
    /// an earlier version's shape among them).
    init?(at: Int64, member: String) {
        let parts = member.split(separator: "|", omittingEmptySubsequences: false)
        guard parts.count == 3 else { return nil }
        let numbers = parts[1].split(separator: " ").compactMap { Int64($0) }
        guard numbers.count == 8 else { return nil }
        var answers: [String: Int] = [:]
        for pair in parts[2].split(separator: ",") {
            let field = pair.split(separator: ":")
            if field.count == 2, let count = Int(field[1]) { answers[String(field[0])] = count }
        }
        self.at = at
        figures = Figures(ready: Int(numbers[0]), reserved: Int(numbers[1]), delayed: Int(numbers[2]), dead: Int(numbers[3]),
                          tokensGranted: numbers[4], done: numbers[5], retried: numbers[6], died: numbers[7], answers: answers)
    }
}
