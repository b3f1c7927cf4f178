import Foundation
import RedisClient

/// A job that will not be retried, with the reason, as kept in the dead-letter stream.
public struct DeadLetter: Sendable, Hashable {
    /// The dead-letter stream entry id.
    public let id: String
    /// The job as it last ran; nil if the entry was not a job (see `jobText`).
    public let job: Job?
    /// The stored job text, decodable or not (at most 500 characters).
    public let jobText: String
    public let failure: JobFailure
    /// How many times the job ran.
    public let attempts: Int
    /// Times in ms since the epoch (Redis clock).
    public let firstFailure: Int64
    public let lastFailure: Int64
    public let buriedAt: Int64

    /// When it was buried.
    public var buried: Date { Date(timeIntervalSince1970: Double(buriedAt) / 1000) }

    /// The letter in one line, as `receiptfleet dead list` lists it.
    public var line: String {
        let subject = job.map { "subscription \($0.subscriptionID), run \($0.runID)" } ?? "not a job: \(jobText)"
        return "\(id)  \(subject)  \(failure.errorClass): \(failure.message)  (\(attempts) attempts, buried \(buried))"
    }
}

/// Which dead letters an operation applies to: those matching every criterion given.
public struct DeadLetterFilter: Sendable, Hashable, CustomStringConvertible {
    public var errorClass: String?
    /// A run id: a scheduler pass's (`2026-11-28/2`), or a night's, which takes all its passes.
    public var runID: String?
    public var subscriptionIDs: Set<Int64>?
    /// Dead-letter stream entry ids (`DeadLetter.id`): one letter, or a chosen few.
    public var ids: Set<String>?
    /// Text the letter's failure message, error class or job holds, whatever its case.
    public var text: String?

    public init(
        errorClass: String? = nil, runID: String? = nil, subscriptionIDs: Set<Int64>? = nil, ids: Set<String>? = nil, text: String? = nil
    ) {
        self.errorClass = errorClass
        self.runID = runID
        self.subscriptionIDs = subscriptionIDs
        self.ids = ids
        self.text = text
    }

    /// Every dead letter.
    public static let all = DeadLetterFilter()

    /// "all", or the criteria as the audit trail and the logs name them: "error-class=apple.21002 run=…".
    public var description: String {
        let named = [errorClass.map { "error-class=\($0)" }, runID.map { "run=\($0)" }, text.map { "text=\($0)" }].compactMap(\.self)
            + (subscriptionIDs ?? []).sorted().map { "subscription=\($0)" } + (ids ?? []).sorted().map { "id=\($0)" }
        return named.isEmpty ? "all" : named.joined(separator: " ")
    }

    func matches(_ letter: DeadLetter) -> Bool {
        if let ids, !ids.contains(letter.id) { return false }
        if let errorClass, letter.failure.errorClass != errorClass { return false }
        if let runID, !(letter.job.map { SchedulerPassID.runID($0.runID, isIn: runID) } ?? false) { return false }
        if let subscriptionIDs, !(letter.job.map { subscriptionIDs.contains($0.subscriptionID) } ?? false) {
            return false
        }
        if let text, ![letter.failure.message, letter.failure.errorClass, letter.jobText].contains(where: { $0.localizedCaseInsensitiveContains(text) }) {
            return false
        }
        return true
    }
}

/// The dead letters counted: by error class over them all, and those a filter matches.
public struct DeadLetterCounts: Sendable, Hashable {
    public var byErrorClass: [String: Int]
    public var matching: Int
    public var total: Int { byErrorClass.values.reduce(0, +) }

    /// The error classes and their letters, the most letters first.
    public var byKind: [(errorClass: String, count: Int)] {
        byErrorClass.sorted { ($1.value, $0.key) < ($0.value, $1.key) }.map { ($0.key, $0.value) }
    }
}

extension JobQueue {
    /// The oldest `limit` dead letters matching `filter`, after the letter `after` (a page's last id)
    /// when given.
    public func deadLetters(
        matching filter: DeadLetterFilter = .all, after: String? = nil, limit: Int = 100
    ) throws(QueueError) -> [DeadLetter] {
        var found: [DeadLetter] = []
        try forEachDeadLetterPage(after: after) { (page) throws(QueueError) in
            found += page.filter(filter.matches).prefix(limit - found.count)
            return found.count < limit
        }
        return found
    }

    /// Re-enqueues dead letters as fresh jobs (attempt 0), each only if it is still in the
    /// dead-letter stream (so concurrent replays cannot duplicate it). Replay is a deduplicated
    /// reason: a letter whose subscription is already queued again (a later pass enqueued it)
    /// leaves the dead letters without a second job, since the queued one does the same work.
    /// A replayed job is its run's (its pass's) again: it leaves the run's dead for its replayed, the
    /// run has it to go again, and it counts once it is verified or dies again. A letter whose
    /// subscription a later pass queued stays among its run's dead (that job is the later pass's).
    /// KEYS[1] dead stream, KEYS[2] ready stream, KEYS[3] queued bitmap, KEYS[4] queued per second,
    /// KEYS[5] queued seconds, KEYS[6…] the letters' runs' tallies. ARGV[1] reason letter, ARGV[2…] quadruples of dead-letter
    /// id, subscription id, run id, index in KEYS of its run's tally. Returns the number of letters replayed.
    private static let replayScript = ClockedScript(
        ScriptPrologue.freshJob + ScriptPrologue.countQueued + ScriptPrologue.tallyRun + """
        local replayed, added = 0, 0
        for i = 2, #ARGV, 4 do
            if redis.call('XDEL', KEYS[1], ARGV[i]) == 1 then
                if redis.call('SETBIT', KEYS[3], ARGV[i + 1], 1) == 0 then
                    redis.call('XADD', KEYS[2], '*', 'j', freshJob(ARGV[i + 1], ARGV[i + 2], ARGV[1]))
                    tallyRun(KEYS[tonumber(ARGV[i + 3])], 'dead', -1)
                    tallyRun(KEYS[tonumber(ARGV[i + 3])], 'replayed', 1)
                    added = added + 1
                end
                replayed = replayed + 1
            end
        end
        if added > 0 then countQueued(KEYS[4], KEYS[5], now, added) end
        return replayed
        """)

    /// Enqueues the matching dead letters again as fresh jobs (attempt 0, reason replay) and
    /// removes them from the dead letters, atomically per letter. Like the bulk enqueue, replay
    /// adds no job for a subscription already queued (a later pass enqueued it again): its letter
    /// goes, and the queued job does the work. Letters that are not jobs stay (purge them).
    /// Returns how many letters were replayed.
    @discardableResult
    public func replay(matching filter: DeadLetterFilter) throws(QueueError) -> Int {
        var replayed = 0
        try forEachDeadLetterPage { (page) throws(QueueError) in
            let jobs = page.filter(filter.matches).compactMap { letter in letter.job.map { (letter.id, $0) } }
            let runs = Array(Set(jobs.map(\.1.runID))).sorted()
            var arguments: [any RedisArgument] = [Job.Reason.replay.rawValue]
            for (id, job) in jobs {
                arguments += [id, job.subscriptionID, job.runID, runs.firstIndex(of: job.runID)! + 6]
            }
            if !jobs.isEmpty {
                let reply = try evaluate(
                    Self.replayScript, keys: [keys.dead, keys.ready, keys.queued] + keys.queuedSince + runs.map(keys.run),
                    arguments: arguments)
                replayed += Int(reply.int ?? 0)
            }
            return true
        }
        return replayed
    }

    /// Deletes the matching dead letters for good. A dead letter holds no queued bit (burial
    /// cleared it), so purging changes nothing about what a sweep enqueues. Returns how many were deleted.
    @discardableResult
    public func purge(matching filter: DeadLetterFilter) throws(QueueError) -> Int {
        var purged = 0
        try forEachDeadLetterPage { (page) throws(QueueError) in
            let ids = page.filter(filter.matches).map(\.id)
            if !ids.isEmpty {
                purged += Int(try connection.execute(["XDEL", keys.dead] + ids).int ?? 0)
            }
            return true
        }
        return purged
    }

    /// Counts every dead letter by error class, and those matching `filter`, in one pass.
    public func countDeadLetters(matching filter: DeadLetterFilter = .all) throws(QueueError) -> DeadLetterCounts {
        var counts = DeadLetterCounts(byErrorClass: [:], matching: 0)
        try forEachDeadLetterPage { page in
            for letter in page {
                counts.byErrorClass[letter.failure.errorClass, default: 0] += 1
                if filter.matches(letter) { counts.matching += 1 }
            }
            return true
        }
        return counts
    }

    static let largestStreamID = "18446744073709551615-18446744073709551615"

    /// Reads the dead-letter stream oldest first (after the entry `after`), a page at a time, while
    /// `body` returns true.
    private func forEachDeadLetterPage(
        after: String? = nil, _ body: ([DeadLetter]) throws(QueueError) -> Bool
    ) throws(QueueError) {
        // Nothing comes after the largest id a stream can hold, and Redis refuses a range from past it.
        if after == Self.largestStreamID { return }
        var start = after.map { "(" + $0 } ?? "-"
        while true {
            let reply = try connection.execute(["XRANGE", keys.dead, start, "+", "COUNT", 500])
            guard let entries = reply.array else { throw .unexpectedReply(operation: "XRANGE", reply: "\(reply)") }
            let page = entries.compactMap(DeadLetter.init(entry:))
            guard try body(page), entries.count == 500, let last = entries.last?.array?.first?.string else { return }
            start = "(" + last
        }
    }
}

extension DeadLetter {
    /// Reads one XRANGE entry of the dead-letter stream; nil if it is not shaped like one.
    init?(entry: RedisValue) {
        guard let parts = entry.array, parts.count == 2, let id = parts[0].string, let flat = parts[1].array else {
            return nil
        }
        var fields: [String: String] = [:]
        for index in stride(from: 0, to: flat.count - 1, by: 2) {
            if let name = flat[index].string { fields[name] = flat[index + 1].string ?? "" }
        }
        let number = { (name: String) in fields[name].flatMap { Int64($0) } ?? 0 }
        self.id = id
        jobText = fields["job"] ?? ""
        job = try? Job(encoded: jobText)
        failure = JobFailure(errorClass: fields["error"] ?? "", message: fields["message"] ?? "")
        attempts = Int(number("attempts"))
        firstFailure = number("first_failure")
        lastFailure = number("last_failure")
        buriedAt = number("buried_at")
    }
}
