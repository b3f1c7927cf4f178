#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Redis Cluster moves slots between nodes (resharding) and promotes replicas (failover); a node
/// then answers a command for a slot it does not serve with an error naming who does. None of
/// these errors means the command ran, so sending it again is safe:
///
/// - `MOVED <slot> <host>:<port>`: the slot lives there now. The connection repoints itself at
///   that node for good (every key of a deployment shares one slot) and sends the command again.
/// - `ASK <slot> <host>:<port>`: the slot is being migrated and this key is already there: send
///   it to that node once, preceded by ASKING, without repointing.
/// - `TRYAGAIN`: a multi-key command whose keys are split by a migration in progress: wait a
///   little and send it again.
///
/// A standalone Redis never answers these, so for it nothing changes.
extension RedisConnection {
    /// Redirects followed for one command before its last answer is returned as it is. While a
    /// slot migrates, a script whose keys are not all on one side yet bounces between ASK and
    /// TRYAGAIN until the move is done: about 2 s of waits in all, well past a reshard's step.
    static let redirectLimit = 16

    func followingRedirects(
        _ commands: [[any RedisArgument]], send: ([[any RedisArgument]]) throws(RedisError) -> [RedisValue]
    ) throws(RedisError) -> [RedisValue] {
        var replies = try send(commands)
        for attempt in 0..<Self.redirectLimit {
            let redirected = replies.indices.compactMap { index in Redirect(replies[index]).map { (index, $0) } }
            guard !redirected.isEmpty else { break }
            if let moved = redirected.lazy.compactMap({ $0.1.movedTo }).first {
                repoint(to: moved)
            } else if let asked = redirected.lazy.compactMap({ $0.1.askedAt }).first {
                let askedIndices = redirected.filter { $0.1.askedAt == asked }.map(\.0)
                let again = try askOnce(asked, askedIndices.map { commands[$0] })
                for (index, reply) in zip(askedIndices, again) { replies[index] = reply }
                continue
            } else {
                // TRYAGAIN only: a migration is moving the keys; give it a moment (10, 20, 40… 200 ms).
                usleep(useconds_t(min(10_000 << attempt, 200_000)))
            }
            let again = try send(redirected.map { commands[$0.0] })
            for ((index, _), reply) in zip(redirected, again) { replies[index] = reply }
        }
        return replies
    }

    /// Points the connection at `endpoint` from the next command on, with the same credentials.
    private func repoint(to endpoint: RedisConfiguration.Endpoint) {
        guard configuration.endpoint != endpoint else { return }
        disconnect()
        configuration.endpoint = endpoint
    }

    /// Sends each command to `endpoint` once, after ASKING, on a connection of its own.
    private func askOnce(_ endpoint: RedisConfiguration.Endpoint, _ commands: [[any RedisArgument]]) throws(RedisError) -> [RedisValue] {
        var target = configuration
        target.endpoint = endpoint
        let replies = try RedisConnection(target).pipeline(commands.flatMap { [["ASKING"], $0] })
        return stride(from: 1, to: replies.count, by: 2).map { replies[$0] }
    }
}

/// A cluster's answer that the command belongs elsewhere, parsed from its error reply.
private enum Redirect: Equatable {
    case moved(RedisConfiguration.Endpoint)
    case ask(RedisConfiguration.Endpoint)
    case tryAgain

    init?(_ reply: RedisValue) {
        guard case .error(let message) = reply else { return nil }
        let parts = message.split(separator: " ")
        switch parts.first {
        case "MOVED", "ASK":
            guard parts.count == 3, let colon = parts[2].lastIndex(of: ":"),
                  let port = Int(parts[2][parts[2].index(after: colon)...]) else { return nil }
            let endpoint = RedisConfiguration.Endpoint.tcp(host: String(parts[2][..<colon]), port: port)
            self = parts[0] == "MOVED" ? .moved(endpoint) : .ask(endpoint)
        case "TRYAGAIN": self = .tryAgain
        default: return nil
        }
    }

    var movedTo: RedisConfiguration.Endpoint? { if case .moved(let endpoint) = self { endpoint } else { nil } }
    var askedAt: RedisConfiguration.Endpoint? { if case .ask(let endpoint) = self { endpoint } else { nil } }
}
