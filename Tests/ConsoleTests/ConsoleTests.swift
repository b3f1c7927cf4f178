import AppStore
import AppStoreSimulator
import Console
import EventRelay
import Fleet
import Foundation
import HTTPClient
import JobQueue
import Ledger
import Logging
import Operations
import RedisClient
import TestSupport
import Testing

/// The console over HTTP: who may log in, what a session and a CSRF token guard, that the page's
/// numbers are `status`'s, and that its actions are the CLI's.
@Suite struct ConsoleTests {
    @Test func onlyAnOperatorTokenLogsIn() async throws {
        try await ConsoleHarness.with { console in
            let wrong = try await console.post("/console/login", ["token": "an-api-token-is-not-an-operator-token"])
            #expect(wrong.status == 401)
            #expect(wrong.sessionCookie == nil)
            #expect(wrong.text(id: "problem")?.contains("not an operator token") == true)

            let right = try await console.post("/console/login", ["token": console.operatorToken])
            #expect(right.status == 303 && right.location == "/console")
            let cookie = try #require(right.headers.fields.first { $0.name.lowercased() == "set-cookie" }?.value)
            #expect(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict") && cookie.contains("Path=/console"))
            #expect(!cookie.contains("Secure"), "plain http here: a Secure cookie would never come back")

            // Without a session every page sends the operator to the login form.
            let anonymous = try await console.get("/console/dead")
            #expect(anonymous.status == 303 && anonymous.location == "/console/login")
            let forged = try await console.get("/console", session: .init(cookie: String(repeating: "ab", count: 32), csrf: ""))
            #expect(forged.status == 303 && forged.location == "/console/login")
        }
    }

    @Test func behindTLSTheCookieIsSecure() async throws {
        try await ConsoleHarness.with(secureCookies: true) { console in
            let login = try await console.post("/console/login", ["token": console.operatorToken])
            let cookie = try #require(login.headers.fields.first { $0.name.lowercased() == "set-cookie" }?.value)
            #expect(cookie.contains("Secure") && cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"))
        }
    }

    @Test func aSessionIsTheFleetsNotAReplicas() async throws {
        try await ConsoleHarness.with(replicas: 2) { console in
            let session = try await console.logIn(replica: 0)
            let elsewhere = try await console.get("/console", session: session, replica: 1)
            #expect(elsewhere.status == 200)
            #expect(elsewhere.body.contains("ops-alice"))

            // Logging out through the other replica ends it everywhere.
            let out = try await console.post("/console/logout", ["csrf": session.csrf], session: session, replica: 1)
            #expect(out.status == 303 && out.location == "/console/login")
            #expect(try await console.get("/console", session: session, replica: 0).status == 303)
        }
    }

    /// A session lasts only while the operator token that opened it is configured: the replicas
    /// here share Redis as `serve` restarted with other tokens would. Replica 0 has bob's first
    /// token; 1, bob rotating to a second; 2, bob's second alone; 3, no bob at all.
    @Test func removingOrRotatingAnOperatorTokenEndsItsSessions() async throws {
        let (first, second) = ("bob-first-" + UUID().uuidString, "bob-second-" + UUID().uuidString)
        let tokens = ["ops-bob:\(first)", "ops-bob:\(first),ops-bob:\(second)", "ops-bob:\(second)", nil]
        try await ConsoleHarness.with(replicas: 4, operators: { replica, alice in
            (["ops-alice:\(alice)"] + [tokens[replica]].compactMap { $0 }).joined(separator: ",")
        }) { console in
            let bobs = try await console.logIn(replica: 0, token: first)
            let alices = try await console.logIn(replica: 3)
            #expect(try await console.get("/console", session: bobs, replica: 1).status == 200, "during the rotation both tokens hold")
            // Rotated out: the session opened with the first token ends at its next request, everywhere.
            let rotated = try await console.get("/console", session: bobs, replica: 2)
            #expect(rotated.status == 303 && rotated.location == "/console/login")
            #expect(try await console.get("/console", session: bobs, replica: 1).status == 303, "the session is gone, not just refused")
            // Removed: a session opened with the second token pauses nothing where bob has no token,
            // and is over everywhere after.
            let again = try await console.logIn(replica: 2, token: second)
            #expect(try await console.get("/console", session: again, replica: 1).status == 200)
            let pause = try await console.post("/console/gate/pause", ["csrf": again.csrf, "reason": "x"], session: again, replica: 3)
            #expect(pause.status == 401, "an ended session pauses nothing")
            #expect(try await console.status().queue.haltedReason == nil)
            #expect(try await console.get("/console", session: again, replica: 2).status == 303)
            // Alice's session, her token unchanged, holds throughout.
            #expect(try await console.get("/console", session: alices, replica: 0).status == 200)
        }
    }

    /// Guessing tokens: wrong logins are counted per address in Redis, for every replica together;
    /// once an address has used its tries, even the right token waits (429, Retry-After), and the
    /// log has one line about it, not one per guess.
    @Test func wrongLoginsFromOneAddressAreLimitedFleetWide() async throws {
        let log = CapturedLog()
        try await ConsoleHarness.with(replicas: 2, log: log) { console in
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for attempt in 0..<OpsConsole.loginAttempts {
                    group.addTask { try await console.post("/console/login", ["token": "wrong-\(attempt)-0123456789abcdef"], replica: attempt % 2).status }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(statuses == Array(repeating: 401, count: OpsConsole.loginAttempts))
            for replica in 0..<2 {
                let refused = try await console.post("/console/login", ["token": console.operatorToken], replica: replica)
                #expect(refused.status == 429, "even the right token waits once the address used its tries")
                #expect((Int(refused.headers["Retry-After"] ?? "") ?? 0) > 60)
                #expect(refused.sessionCookie == nil)
            }
            #expect(log.text.split(separator: "\n").count { $0.contains("logins refused for a while") } == 1)
            #expect(log.text.split(separator: "\n").count { $0.contains("login") } == 1, "no line per guess:\n\(log.text)")
        }
    }

    /// Behind a trusted proxy (`trusted-proxies`, as `serve` has it), wrong logins are counted by the
    /// caller the proxy names, not by the proxy: one guesser does not lock every operator out.
    @Test func behindATrustedProxyWrongLoginsAreCountedByTheCaller() async throws {
        try await ConsoleHarness.with(trustedProxies: "127.0.0.1") { console in
            let wrong = try await withThrowingTaskGroup(of: Int.self) { group in
                for attempt in 0..<OpsConsole.loginAttempts {
                    group.addTask {
                        try await console.post("/console/login", ["token": "wrong-\(attempt)-0123456789abcdef"], forwardedFor: "203.0.113.5").status
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(wrong == Array(repeating: 401, count: OpsConsole.loginAttempts))
            let guesser = try await console.post("/console/login", ["token": console.operatorToken], forwardedFor: "203.0.113.5")
            #expect(guesser.status == 429, "the guesser's own address used its tries")
            let colleague = try await console.post("/console/login", ["token": console.operatorToken], forwardedFor: "203.0.113.6")
            #expect(colleague.status == 303 && colleague.sessionCookie != nil, "another operator behind the same proxy logs in")
        }
    }

    /// The check and the count are one step: thirty wrong logins at once from one address get the
    /// address's ten tries and twenty refusals, not thirty tries.
    @Test func wrongLoginsAtOnceGetOnlyTheAddressesTries() async throws {
        try await ConsoleHarness.with { console in
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for attempt in 0..<(3 * OpsConsole.loginAttempts) {
                    group.addTask { try await console.post("/console/login", ["token": "wrong-\(attempt)-0123456789abcdef"]).status }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(statuses.count { $0 == 401 } == OpsConsole.loginAttempts, "\(statuses.sorted())")
            #expect(statuses.count { $0 == 429 } == 2 * OpsConsole.loginAttempts)
        }
    }

    /// An IPv6 caller holds a whole /64: its addresses share one set of tries.
    @Test func theAddressesOfOneIPv6SlashSixtyFourShareTheirTries() async throws {
        try await ConsoleHarness.with(trustedProxies: "127.0.0.1") { console in
            let wrong = try await withThrowingTaskGroup(of: Int.self) { group in
                for attempt in 0..<OpsConsole.loginAttempts {
                    group.addTask {
                        try await console.post(
                            "/console/login", ["token": "wrong-\(attempt)-0123456789abcdef"], forwardedFor: "2001:db8:7:9::\(attempt + 1)"
                        ).status
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(wrong == Array(repeating: 401, count: OpsConsole.loginAttempts))
            let sameSlash64 = try await console.post("/console/login", ["token": console.operatorToken], forwardedFor: "2001:db8:7:9:ffff::1")
            #expect(sameSlash64.status == 429, "another address of the same /64 has no tries left")
            let otherSlash64 = try await console.post("/console/login", ["token": console.operatorToken], forwardedFor: "2001:db8:7:a::1")
            #expect(otherSlash64.status == 303)
        }
    }

    /// Without Redis nothing can count wrong logins, so none is tried: 503, at the Redis deadline.
    @Test func noLoginIsTriedWhileRedisCannotCountWrongOnes() async throws {
        let proxy = try FreezableProxy.forTestRedis()
        try await ConsoleHarness.with(configureFleet: { fleet in
            fleet.redisURL = proxy.carrying(fleet.redisURL)
            fleet.redisTimeout = .seconds(1)
        }) { console in
            _ = try await console.logIn()
            proxy.freeze(forAtMost: .seconds(20))
            let frozen = try await console.post("/console/login", ["token": console.operatorToken])
            proxy.thaw()
            #expect(frozen.status == 503)
            #expect(frozen.sessionCookie == nil)
            #expect(frozen.body.contains("Redis does not answer"))
            _ = try await console.logIn()
        }
    }

    /// A page that needs a frozen Redis says so within the console's Redis deadline, and works
    /// again by itself once Redis answers.
    @Test func aFrozenRedisTimeoutShowsAPageThatSaysSo() async throws {
        let proxy = try FreezableProxy.forTestRedis()
        // Redis's own deadline is long, so a bound a loaded machine meets (a third of it) still
        // fails a page that waited for it instead of the console's.
        let redisTimeout = Duration.seconds(30)
        try await ConsoleHarness.with(configureFleet: { fleet in
            fleet.redisURL = proxy.carrying(fleet.redisURL)
            fleet.redisTimeout = redisTimeout
        }) { console in
            let session = try await console.logIn()
            proxy.freeze(forAtMost: .seconds(60))
            defer { proxy.thaw() }
            let started = ContinuousClock.now
            let frozen = try await console.get("/console", session: session)
            #expect(started.duration(to: .now) < redisTimeout / 3, "the page came after \(started.duration(to: .now))")
            #expect(frozen.status == 503)
            #expect(frozen.body.contains("Redis is not answering"))
            proxy.thaw()
            #expect(try await eventually(within: .seconds(5), every: .milliseconds(250)) {
                try await console.get("/console", session: session).status == 200
            })
        }
    }

    @Test func theOverviewShowsWhatStatusReads() async throws {
        try await ConsoleHarness.with { console in
            _ = try await console.queueWithADeadLetter()
            try await console.onQueue { queue in
                _ = try queue.ack(try queue.reserve(count: 1, block: .milliseconds(100))[0])
            }
            let session = try await console.logIn()
            let page = try await console.get("/console", session: session)
            let status = try await console.status()
            #expect(status.queue.ready > 0 && status.queue.dead == 1)
            #expect(page.text(id: "queue-ready") == "\(status.queue.ready)")
            #expect(page.text(id: "queue-reserved") == "\(status.queue.reserved)")
            #expect(page.text(id: "queue-delayed") == "\(status.queue.delayedDue + status.queue.delayedLater)")
            #expect(page.text(id: "queue-dead") == "1")
            #expect(page.text(id: "apple-limit") == "1000")
            // The latest pass with its dead apart from its verified, in amber: a death never reads as done.
            let tally = try #require(status.lastRunTally)
            #expect(tally.enqueued > 2 && tally.verified == 1 && tally.dead == 1)
            #expect(page.text(id: "run")?.contains("Pass console-test/1") == true)
            #expect(page.text(id: "run-verified") == "1 verified")
            #expect(page.text(id: "run-dead") == "1 dead")
            #expect(page.text(id: "run-to-go") == "\(tally.enqueued - 2) to go")
            #expect(page.body.contains(#"<p id="run" class="gate paused">"#))
            #expect(page.text(id: "gate")?.hasPrefix("Open") == true)
            #expect(page.headers["Content-Security-Policy"]?.contains("default-src 'self'") == true)
        }
    }

    /// The texts of the cells of the scheduler table's row whose `data-run` (a pass) or
    /// `data-night` (a night) is `id`: name, started, due, jobs, verified, dead, replayed, took,
    /// Apple calls, events.
    static func passRow(_ page: ConsoleHarness.Reply, _ attribute: String, _ id: String) throws -> [String] {
        let pattern = try Regex(#"<tr[^>]* data-\#(attribute)="\#(id)">(.*?)</tr>"#).dotMatchesNewlines()
        let row = try #require(page.body.firstMatch(of: pattern).flatMap { $0.output[1].substring }, "no row \(attribute) \(id)")
        return row.matches(of: #/<t[dh][^>]*>(.*?)</t[dh]>/#).map { String($0.output.1) }
    }

    /// A finished night from the ledger, its pass under it; and the night settling now, with its tally's live figures.
    @Test func nightsAreRowsOverTheirPasses() async throws {
        try await ConsoleHarness.with { console in
            _ = try await console.queueWithADeadLetter()  // pass console-test/1: one dead, the rest queued
            // Whole seconds, as PostgreSQL keeps them exactly: the pass took 90 minutes to the microsecond.
            let started = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 - 7 * 86_400).rounded(.down))
            try await console.onLedger { ledger in
                try ledger.beginSchedulerPass(passID: "2026-11-20/1", night: "2026-11-20", pass: 1, startedAt: started)
                try ledger.recordSchedulerPass(passID: "2026-11-20/1", due: 1_800, enqueued: 1_785, ended: true)
                try ledger.updateSchedulerPass(passID: "2026-11-20/1", verified: 1_659, dead: 126, replayed: 3, toGo: 0,
                                               lastSettledAt: started.addingTimeInterval(5_400))
                try ledger.updateSchedulerNight("2026-11-20")
            }
            let page = try await console.get("/console", session: try await console.logIn())
            let night = try Self.passRow(page, "night", "2026-11-20")
            #expect(night.first == "2026-11-20: 1 pass" && Array(night[2...7]) == ["1,800", "1,785", "1,659", "126", "3", "90 min"], "\(night)")
            #expect(try Self.passRow(page, "run", "2026-11-20/1").dropFirst() == night.dropFirst())
            #expect(page.body.contains(#"<td class="problem">126</td>"#))
            let live = try Self.passRow(page, "run", "console-test/1")
            #expect(live[5] == "1" && live[7].contains(" to go, "), "\(live)")
            #expect(try Self.passRow(page, "night", "console-test").first == "console-test: 1 pass")
        }
    }

    /// Two plain passes on one night: each a row of its own, with its own due, jobs, verified and
    /// dead, under the night's row that adds them up.
    @Test func twoPassesOfOneNightAreRowsOfTheirOwnUnderTheNightsTotals() async throws {
        try await ConsoleHarness.with { console in
            _ = try await console.queueWithADeadLetter()  // pass console-test/1: one dead, the rest queued
            let first = try #require(try await console.onQueue { try $0.tally(ofRun: "console-test/1") })
            try await console.onQueue { _ = try $0.ack(try $0.reserve(count: 1, block: .milliseconds(100))[0]) }
            // The second pass finds every subscription due again; it enqueues the two whose jobs left the queue.
            let fleet = console.fleet
            let second = try await onOwnThread { try Scheduler(settings: fleet).run(Scheduler.Options(night: "console-test"), now: Date()) }
            #expect(second.passID == "console-test/2" && second.enqueued == 2 && second.found == first.enqueued)
            try await console.onQueue { queue in
                let held = try queue.reserve(count: 100, block: .milliseconds(100))
                _ = try queue.ack(held.filter { $0.job.runID == "console-test/2" })
            }
            let page = try await console.get("/console", session: try await console.logIn())
            // A handful of subscriptions: no thousands to group.
            let (due, jobs, left) = ("\(first.enqueued)", "\(first.enqueued + 2)", "\(first.enqueued - 2)")
            let pass2 = try Self.passRow(page, "run", "console-test/2")
            #expect(pass2[0] == "pass 2" && Array(pass2[2...6]) == [due, "2", "2", "0", "0"] && pass2[7].hasSuffix(" s"), "\(pass2)")
            let pass1 = try Self.passRow(page, "run", "console-test/1")
            #expect(pass1[0] == "pass 1" && Array(pass1[2...6]) == [due, due, "1", "1", "0"] && pass1[7].hasPrefix("\(left) to go, "), "\(pass1)")
            let night = try Self.passRow(page, "night", "console-test")
            #expect(night[0] == "console-test: 2 passes" && Array(night[2...6]) == [due, jobs, "3", "1", "0"], "\(night)")
            #expect(night[7].hasPrefix("\(left) to go, "), "\(night)")
            // The passes in order, latest first, under their night.
            let order = page.body.matches(of: #/data-(?:run|night)="(console-test[^"]*)"/#).map { String($0.output.1) }
            #expect(order == ["console-test", "console-test/2", "console-test/1"])
        }
    }

    /// A pass that ended with a dead letter is finished in the ledger; its letter replayed later
    /// opens it again (to go, no longer dead, replayed), and it finishes again once that job is verified.
    @Test func aDeadLetterReplayedAfterItsPassFinishedOpensThePassAgain() async throws {
        try await ConsoleHarness.with { console in
            let fleet = console.fleet
            let scheduled = try await onOwnThread { try Scheduler(settings: fleet).run(Scheduler.Options(night: "replays"), now: Date()) }
            let jobs = scheduled.enqueued
            try await console.onQueue { queue in
                let held = try queue.reserve(count: 100, block: .milliseconds(100))
                _ = try queue.ack(Array(held.dropFirst()))
                try queue.bury(held[0], failure: JobFailure(errorClass: "apple.21010", message: "the account was not found"))
            }
            func recorded() async throws -> SchedulerPassFigures {
                try await onOwnThread { try Scheduler(settings: fleet).recordPassProgress(now: Date()) }
                return try #require(try await console.onLedger { try $0.schedulerNights(limit: 1).first?.passes.first?.figures })
            }
            let ended = try await recorded()
            #expect((ended.verified, ended.dead, ended.replayed) == (jobs - 1, 1, 0) && ended.finishedAt != nil)

            #expect(try await console.onQueue { try $0.replay(matching: DeadLetterFilter(runID: "replays")) } == 1)
            let reopened = try await recorded()
            #expect((reopened.verified, reopened.dead, reopened.replayed) == (jobs - 1, 0, 1) && reopened.finishedAt == nil)
            let session = try await console.logIn()
            let row = try Self.passRow(try await console.get("/console", session: session), "run", "replays/1")
            #expect(Array(row[4...6]) == ["\(jobs - 1)", "0", "1"] && row[7].hasPrefix("1 to go, "), "\(row)")

            try await console.onQueue { _ = try $0.ack(try $0.reserve(count: 1, block: .milliseconds(100))) }
            let again = try await recorded()
            #expect((again.verified, again.dead, again.replayed) == (jobs, 0, 1))
            #expect(again.finishedAt != nil && again.finishedAt! >= ended.finishedAt!)
        }
    }

    /// A pass still settling counts the fleet's Apple calls and events up to now, not after it ends.
    @Test func aPassStillSettlingShowsItsAppleCallsAndEventsSoFar() async throws {
        try await ConsoleHarness.with { console in
            _ = try await console.queueWithADeadLetter()  // pass console-test/1: one dead, the rest queued
            let session = try await console.logIn()
            let before = try Self.passRow(try await console.get("/console", session: session), "run", "console-test/1")
            #expect(before[8...9] == ["0", "0"], "\(before)")
            // The fleet asks Apple three times and announces two events while the pass settles.
            try await console.onOwnDatabase { connection in
                try connection.runScript("""
                    INSERT INTO verifications (subscription_id, run_id, outcome)
                    SELECT id, 'console-test/1', 'verified' FROM subscriptions ORDER BY id LIMIT 1;
                    INSERT INTO verifications (subscription_id, run_id, outcome)
                    SELECT id, 'notification', 'verified' FROM subscriptions ORDER BY id LIMIT 2;
                    INSERT INTO events (id, subscription_id, original_transaction_id, type, payload, occurred_at)
                    SELECT gen_random_uuid(), id, original_transaction_id, 'renewed', '{}', now() FROM subscriptions ORDER BY id LIMIT 2;
                    """)
            }
            let page = try await console.get("/console", session: session)
            let pass = try Self.passRow(page, "run", "console-test/1")
            #expect(pass[7].contains(" to go, ") && pass[8...9] == ["3", "2"], "\(pass)")
            #expect(try Self.passRow(page, "night", "console-test")[8...9] == ["3", "2"])
        }
    }

    /// When `notifications recover` last ran, and what it found, from the audit trail it writes.
    @Test func theOverviewSaysWhenMissedNotificationsWereLastRecovered() async throws {
        try await ConsoleHarness.with { console in
            let session = try await console.logIn()
            func line() async throws -> String {
                try #require(try await console.get("/console", session: session).text(id: "notification-recovery"))
                    .replacingOccurrences(of: "&#39;", with: "'")
            }
            let before = try await line()
            #expect(before.contains("No recovery from Apple's notification history is recorded"), "\(before)")
            try await console.onLedger { ledger in
                try ledger.record(AuditRecord(actor: "root", via: .cli, action: "notifications.recover",
                                              details: ["found": "41", "new": "3"]))
            }
            let after = try await line()
            #expect(after.hasPrefix("Missed notifications: Last recovered ") && after.hasSuffix(": 41 in Apple's history, 3 new."), "\(after)")
        }
    }

    /// A worker that gave up rate-limit slots is named, with what to do; one that gave up none is not.
    @Test func aStarvedWorkerIsNamedOnTheOverview() async throws {
        try await ConsoleHarness.with { console in
            let session = try await console.logIn()
            let before = try await console.get("/console", session: session)
            try await console.onQueue { try $0.reportSlotsGivenUp(12, by: "worker-host-4242-abc") }
            let page = try await console.get("/console", session: session)
            #expect(!before.body.contains("rate-limit slots"))
            let line = try #require(page.text(id: "starved-worker-host-4242-abc"))
            #expect(line.hasPrefix("Worker worker-host-4242-abc gave up 12 rate-limit slots, the last "))
            #expect(line.contains("fewer threads"))
        }
    }

    /// Each app's schedule shows in the Apps table: nightly, and why, once a scheduler pass found
    /// that its notifications do not arrive.
    @Test func eachAppsScheduleIsShownWithWhy() async throws {
        try await ConsoleHarness.with { console in
            let session = try await console.logIn()
            #expect(try await console.get("/console", session: session).body.contains("<th>Schedule</th>"))
            let fleet = console.fleet
            _ = try await onOwnThread { try Scheduler(settings: fleet).run(Scheduler.Options(night: "console-schedule"), now: Date()) }
            let page = try await console.get("/console", session: session)
            #expect(page.body.contains(#"<td class="gate paused">Nightly: no V2 notification arrived in the last 24 hours</td>"#))

            // A renewal Apple signed 40 s before a check knew it; three checks asked Apple.
            let database = console.database
            try await onOwnThread {
                let connection = try database.connect()
                try connection.execute("""
                    INSERT INTO subscriptions (original_transaction_id) VALUES ('7001'), ('7002');
                    """)
                try connection.execute("""
                    WITH signed AS (
                        INSERT INTO notifications (dedupe_key, version, notification_type, outcome, meaning, subscription_id, signed_at)
                        SELECT 'v2:fresh', 2, 'DID_RENEW', 'queued', 'renewed', id, now() - interval '1 hour'
                        FROM subscriptions WHERE original_transaction_id = '7001' RETURNING subscription_id, signed_at)
                    INSERT INTO verifications (subscription_id, run_id, attempted_at, outcome)
                    SELECT subscription_id, run, signed_at + seconds * interval '1 second', 'verified'
                    FROM signed, (VALUES ('notification', 1), ('notification-1', 40), ('night', 300), ('night', 400)) AS checks (run, seconds)
                    """)
            }
            let subscriptions = try await onOwnThread { try database.connect().query("SELECT count(*) AS n FROM subscriptions")[0]["n"].int64() ?? 0 }
            _ = try await onOwnThread { try Scheduler(settings: fleet).run(Scheduler.Options(night: "console-fresh"), now: Date()) }
            let fresh = try await console.get("/console", session: session).body
            #expect(fresh.contains("<th>Fresh within (p99, last day)</th>") && fresh.contains("<td>40 s</td><td>\(String(format: "%.2f", 3 / Double(subscriptions)))</td>"), "\(fresh)")
        }
    }

    /// An app halted by its secret shows in the Apps table with a button that lifts its halt
    /// alone, after a confirmation naming the app and the reason.
    @Test func aHaltedAppIsShownAndResumedAlone() async throws {
        try await ConsoleHarness.with { console in
            _ = try await console.onGate {
                try $0.reportConfigurationError(subscriptionID: 1, reason: "21004: the secret is wrong", needed: 1, app: "default")
            }
            let session = try await console.logIn()
            let page = try await console.get("/console", session: session)
            #expect(page.body.contains(#"<table id="apps">"#) && page.body.contains("Halted: 21004: the secret is wrong"))
            #expect(page.body.contains(#"id="resume-app-default""#))
            #expect(page.text(id: "gate")?.hasPrefix("Open") == true, "the fleet itself is not halted")
            #expect(page.text(id: "banner-app-default-what")?.hasPrefix("The app default is halted since ") == true)
            #expect(page.text(id: "banner-fleet-what") == nil)

            let asked = try await console.post("/console/gate/resume", ["csrf": session.csrf, "app": "default"], session: session)
            let reason = try #require(asked.text(id: "halt-reason"))
            #expect(reason.hasPrefix("The app default is halted since ") && reason.hasSuffix(" Reason: 21004: the secret is wrong"), "\(reason)")
            #expect(asked.text(id: "halt-next")?.hasPrefix("Fix default&#39;s shared secret") == true)
            let resumed = try await console.post(
                "/console/gate/resume", ["csrf": session.csrf, "app": "default", "confirm": "yes"], session: session)
            #expect(resumed.status == 303)
            #expect(try await console.status().apps.allSatisfy { $0.haltedReason == nil })
            let unknown = try await console.post("/console/gate/resume", ["csrf": session.csrf, "app": "photos"], session: session)
            #expect(unknown.status == 400)
        }
    }

    /// While anything stops the fleet, every page opens with a banner: what, by whom, since when,
    /// why, and what to do next; the apps wait with the fleet; the resume page explains the halt it lifts.
    @Test func aHaltIsABannerOnEveryPage() async throws {
        try await ConsoleHarness.with { console in
            let session = try await console.logIn()
            let pages = ["/console", "/console/dead", "/console/subscriptions", "/console/webhooks"]
            for path in pages {
                #expect(try await !console.get(path, session: session).body.contains(#"class="banner"#), "\(path)")
            }
            let running = try await console.get("/console", session: session).body
            #expect(running.contains(#"id="pause""#) && !running.contains(#"id="resume""#), "a running fleet offers Pause only")
            _ = try await console.post("/console/gate/pause", ["csrf": session.csrf, "reason": "Apple maintenance"], session: session)
            for path in pages {
                let page = try await console.get(path, session: session)
                let what = try #require(page.text(id: "banner-fleet-what"), "\(path)")
                #expect(what.hasPrefix("The fleet is halted by ops-alice (console) since ") && what.contains(" s ago)"), "\(what)")
                #expect(page.text(id: "banner-fleet-why") == "Reason: Apple maintenance", "who paused is said once, above")
                #expect(page.text(id: "banner-fleet-next")?.contains("An operator paused it") == true)
            }
            let overview = try await console.get("/console", session: session)
            #expect(overview.body.contains("Waiting: the fleet is halted"), "an app does not read Running while the fleet is halted")
            #expect(!overview.body.contains(#"id="pause""#) && overview.body.contains(#"id="resume""#), "a halted fleet offers Resume only")
            let asked = try await console.post("/console/gate/resume", ["csrf": session.csrf], session: session)
            #expect(asked.text(id: "halt-next")?.hasPrefix("An operator paused it") == true, "an operator's pause is not explained as a 21004")
            #expect(asked.text(id: "halt-next")?.contains("halts it again") == false, "resuming an operator's pause brings nothing back")

            // A halt nobody recorded is the fleet's own: the reason names what to fix.
            _ = try await console.post("/console/gate/resume", ["csrf": session.csrf, "confirm": "yes"], session: session)
            try await console.onGate { try $0.halt(reason: "21000: the App Store could not read the request") }
            let halted = try await console.get("/console/webhooks", session: session)
            #expect(halted.text(id: "banner-fleet-what")?.hasPrefix("The fleet is halted by itself since ") == true)
            #expect(halted.text(id: "banner-fleet-next")?.hasPrefix("Next: Fix what the reason names") == true)
            let early = try await console.post("/console/gate/resume", ["csrf": session.csrf], session: session)
            #expect(early.text(id: "halt-next")?.hasSuffix("Resuming before then halts it again.") == true, "the fleet's own halt comes back")
        }
    }

    @Test func aStaleFormChangesNothing() async throws {
        try await ConsoleHarness.with { console in
            let session = try await console.logIn()
            let stale = try await console.post("/console/gate/pause", ["csrf": String(repeating: "0", count: 64), "reason": "x"], session: session)
            #expect(stale.status == 403)
            #expect(stale.text(id: "error-title") == "This form is out of date")
            let missing = try await console.post("/console/gate/pause", ["reason": "x"], session: session)
            #expect(missing.status == 403)
            #expect(try await console.status().queue.haltedReason == nil, "nothing was halted")

            // A form posted after the session ended is told so, not sent to a login form silently.
            let ended = try await console.post("/console/gate/pause", ["csrf": session.csrf], session: .init(cookie: String(repeating: "cd", count: 32), csrf: ""))
            #expect(ended.status == 401)
            #expect(try await console.status().queue.haltedReason == nil)
        }
    }

    @Test func pauseIsTheFleetsHaltAndResumeFromAHaltAsksFirst() async throws {
        let log = CapturedLog()
        try await ConsoleHarness.with(log: log) { console in
            let session = try await console.logIn()
            let paused = try await console.post("/console/gate/pause", ["csrf": session.csrf, "reason": "Apple maintenance"], session: session)
            #expect(paused.status == 303)
            let reason = try #require(try await console.status().queue.haltedReason)
            #expect(reason == "Apple maintenance")

            let asked = try await console.post("/console/gate/resume", ["csrf": session.csrf], session: session)
            #expect(asked.status == 200)
            #expect(asked.text(id: "halt-reason")?.contains("Apple maintenance") == true)
            #expect(try await console.status().queue.haltedReason != nil, "not resumed before the confirmation")

            let resumed = try await console.post("/console/gate/resume", ["csrf": session.csrf, "confirm": "yes"], session: session)
            #expect(resumed.status == 303 && resumed.location == "/console?done=resumed")
            #expect(try await console.status().queue.haltedReason == nil)
            // Each action logged with who did it.
            let pauseLine = log.text.split(separator: "\n").first { $0.contains("console: paused the fleet") }
            #expect(pauseLine?.contains(#""operator": ops-alice"#) == true && pauseLine?.contains("Apple maintenance") == true)
            let resumeLine = log.text.split(separator: "\n").first { $0.contains("console: resumed the fleet") }
            #expect(resumeLine?.contains(#""operator": ops-alice"#) == true)
            #expect(!log.text.contains(console.operatorToken), "the token is never logged")
            // And recorded in the audit trail as the operator's.
            let trail = try await console.onLedger { try $0.auditTrail(action: "fleet") }
            #expect(trail.map(\.action) == ["fleet.resume", "fleet.pause"])
            #expect(trail.allSatisfy { $0.actor == "ops-alice" && $0.via == .console && $0.outcome == "ok" })
            #expect(trail.last?.details["reason"] == "Apple maintenance")
        }
    }

    @Test func deadLettersAreReplayedOneAtATimeAndPurgedByFilter() async throws {
        try await ConsoleHarness.with { console in
            let (letter, subscription) = try await console.queueWithADeadLetter()
            let session = try await console.logIn()
            let list = try await console.get("/console/dead?error_class=apple.21010", session: session)
            #expect(list.body.contains(#"data-id="\#(letter)""#))
            #expect(list.body.contains("the account was not found"))
            #expect(try await console.get("/console/dead?error_class=timeout", session: session).text(id: "dead-count")
                == "No dead letters matching the filter.")

            let readyBefore = try await console.status().queue.ready
            let replayed = try await console.post("/console/dead/replay", ["csrf": session.csrf, "id": letter], session: session)
            #expect(replayed.location == "/console/dead?done=replayed&n=1")
            let status = try await console.status()
            #expect(status.queue.dead == 0 && status.queue.ready == readyBefore + 1)
            #expect(try await console.onQueue { try $0.deadLetters() }.isEmpty)

            // Bury it again; purging needs the confirmation, then takes what the filter matches.
            try await console.onQueue { queue in
                var reserved: [ReservedJob] = []
                while let job = try queue.reserve(count: 1, block: .milliseconds(50)).first { reserved.append(job) }
                let again = try #require(reserved.first { $0.job.subscriptionID == subscription })
                try queue.bury(again, failure: JobFailure(errorClass: "apple.21010", message: "gone"))
            }
            let unconfirmed = try await console.post("/console/dead/purge", ["csrf": session.csrf, "subscription": "\(subscription)"], session: session)
            #expect(unconfirmed.status == 400)
            #expect(try await console.status().queue.dead == 1)
            let purged = try await console.post(
                "/console/dead/purge", ["csrf": session.csrf, "subscription": "\(subscription)", "confirm": "yes"], session: session)
            #expect(purged.location == "/console/dead?done=purged&n=1")
            #expect(try await console.status().queue.dead == 0)
        }
    }

    /// Dead letters come totalled by kind, each kind with its meaning and its own replay, and page past the oldest 100.
    @Test func deadLettersAreTotalledByKindAndPaged() async throws {
        try await ConsoleHarness.with { console in
            try await console.onQueue { queue in
                try queue.enqueue(subscriptionIDs: Array(1...107), run: "paging", reason: .nightly)
                for (index, job) in try queue.reserve(count: 107, block: .zero).enumerated() {
                    try queue.bury(job, failure: index < 103 ? JobFailure(errorClass: "apple.21002", message: "the receipt data was malformed")
                                                             : JobFailure(errorClass: "timeout", message: "no answer in 30 s"))
                }
            }
            let session = try await console.logIn()
            let first = try await console.get("/console/dead", session: session)
            #expect(first.body.contains(#"<tr data-kind="apple.21002"><td><a href="/console/dead?error_class=apple.21002">apple.21002</a> <span class="muted meaning">the receipt data was malformed</span></td><td>103</td>"#))
            #expect(first.body.contains(#"<tr data-kind="timeout">"#))
            #expect(first.text(id: "dead-count") == "The oldest 100 of 107 dead letters, oldest first.")
            #expect(first.body.components(separatedBy: "<li data-id=").count - 1 == 100, "one line per letter")
            #expect(first.text(id: "first-page") == nil)
            let next = try #require(first.body.firstMatch(of: #/href="([^"]+)" id="next-page"/#).map { String($0.1) })
            let second = try await console.get(next.replacingOccurrences(of: "&amp;", with: "&"), session: session)
            #expect(second.text(id: "dead-count") == "7 more of 107 dead letters, oldest first.")
            #expect(second.body.components(separatedBy: "<li data-id=").count - 1 == 7)
            #expect(second.text(id: "next-page") == nil && second.text(id: "first-page") != nil)
            let filtered = try await console.get("/console/dead?error_class=timeout", session: session)
            #expect(filtered.text(id: "dead-count") == "All 4 dead letters matching the filter, oldest first.")
            #expect(try await console.get("/console/dead?after=junk", session: session).status == 400)

            // Found by any text of theirs, whatever its case.
            let found = try await console.get("/console/dead?q=NO+ANSWER", session: session)
            #expect(found.text(id: "dead-count") == "All 4 dead letters matching the filter, oldest first.")
            #expect(found.body.contains(#"<input type="hidden" name="q" value="NO ANSWER">"#), "the bulk actions keep the search")
            // A kind's replay then takes only the matching letters: its button does not promise the kind's whole count.
            #expect(first.body.contains(#"<button type="submit" class="replay-kind">Replay 103</button>"#))
            #expect(found.body.contains(#"<button type="submit" class="replay-kind">Replay those matching…</button>"#))
            #expect(!found.body.contains(#"class="replay-kind">Replay 103<"#))

            // A kind's replay asks first, saying how many.
            let asked = try await console.post("/console/dead/replay", ["csrf": session.csrf, "error_class": "timeout"], session: session)
            #expect(asked.status == 200 && asked.text(id: "replay-question")?.hasPrefix("Replay 4 dead letters matching error class timeout?") == true,
                    "\(asked.body)")
            #expect(try await console.onQueue { try $0.countDeadLetters() }.total == 107, "nothing replayed before the answer")
            let replayed = try await console.post(
                "/console/dead/replay", ["csrf": session.csrf, "error_class": "timeout", "confirm": "yes"], session: session)
            #expect(replayed.location == "/console/dead?done=replayed&n=4")
            let left = try await console.onQueue { try $0.countDeadLetters() }
            #expect(left.byErrorClass == ["apple.21002": 103])

            // Each letter one compact line that opens on its details and its own buttons.
            #expect(first.body.components(separatedBy: "<details>").count - 1 == 100)
            #expect(first.body.contains(#"<span class="kind">apple.21002</span><span class="muted">×1</span>"#))
            #expect(first.body.contains(#"<div><dt>Run</dt><dd>paging</dd></div>"#))

            // Ticked letters: replayed, or purged, after a page that says how many.
            let ticked = try await console.onQueue { try $0.deadLetters(limit: 4).map(\.id) }
            let replaying = [("csrf", session.csrf), ("id", ticked[0]), ("id", ticked[1])]
            let askedTicked = try await console.post("/console/dead/replay", fields: replaying, session: session)
            #expect(askedTicked.text(id: "replay-question")?.hasPrefix("Replay 2 dead letters (the ticked ones)?") == true, "\(askedTicked.body)")
            #expect(try await console.onQueue { try $0.countDeadLetters() }.total == 103, "nothing replayed before the answer")
            let replayedTicked = try await console.post("/console/dead/replay", fields: replaying + [("confirm", "yes")], session: session)
            #expect(replayedTicked.location == "/console/dead?done=replayed&n=2")
            let purging = [("csrf", session.csrf), ("id", ticked[2]), ("id", ticked[3])]
            let askedPurge = try await console.post("/console/dead/purge", fields: purging, session: session)
            #expect(askedPurge.text(id: "replay-question") == "Purge 2 dead letters (the ticked ones)? They are deleted for good.", "\(askedPurge.body)")
            #expect(askedPurge.body.contains(#"<form method="post" action="/console/dead/purge">"#))
            let purgedTicked = try await console.post("/console/dead/purge", fields: purging + [("confirm", "yes")], session: session)
            #expect(purgedTicked.location == "/console/dead?done=purged&n=2")
            #expect(try await console.onQueue { try $0.countDeadLetters() }.total == 99)
        }
    }

    /// A subscription's page lists what the queue holds for it: a job waiting for a time, its dead letter.
    @Test func aSubscriptionsPageListsItsWaitingJobsAndDeadLetters() async throws {
        try await ConsoleHarness.with { console in
            let record = try await console.subscriptionWithHistory()
            let session = try await console.logIn()
            let quiet = try await console.get("/console/subscriptions/\(record.id)", session: session)
            #expect(quiet.text(id: "queue-summary") == "No job for it is in the queue, and it has no dead letters.")
            try await console.onQueue { queue in
                try queue.enqueue(subscriptionIDs: [record.id], run: "night-9", reason: .nightly)
                let job = try #require(try queue.reserve(count: 1, block: .zero).first)
                try queue.bury(job, failure: JobFailure(errorClass: "apple.21002", message: "the receipt data was malformed"))
                let later = Int64(Date().timeIntervalSince1970 * 1000) + 3_600_000
                try queue.schedule(Job(subscriptionID: record.id, runID: "push", reason: .notification, enqueuedAt: later), at: later)
            }
            let page = try await console.get("/console/subscriptions/\(record.id)", session: session)
            #expect(page.text(id: "queue-summary") == "No nightly or replayed job for it is queued:", "\(page.body)")
            #expect(page.body.contains(#"<li data-where="waiting"><span class="kind">waiting</span><span class="muted">notification</span><span class="message">due "#))
            #expect(page.body.contains(", not tried yet</span>"))
            #expect(page.body.contains(#"<span class="muted">apple.21002</span><span class="message">the receipt data was malformed (×1, "#))
            #expect(page.body.contains(#"<a href="/console/dead?subscription=\#(record.id)">dead letters</a>"#))

            // Its waiting job is acted on from there, through the same confirmation as on the workers page.
            let waiting = try await console.onQueue { queue in try queue.jobs(ofSubscription: record.id, limit: 10).waiting.compactMap(\.job) }
            let text = try #require(waiting.first).encoded
            #expect(page.body.contains(#"<input type="hidden" name="job" value="\#(text.replacingOccurrences(of: "|", with: "&#124;"))">"#)
                    || page.body.contains(#"<input type="hidden" name="job" value="\#(text)">"#), "\(page.body)")
            let retry = [("csrf", session.csrf), ("job", text), ("action", "retry")]
            let asked = try await console.post("/console/workers/waiting", fields: retry, session: session)
            #expect(asked.text(id: "waiting-question")?.hasPrefix("Retry 1 waiting job now") == true, "\(asked.body)")
            let done = try await console.post("/console/workers/waiting", fields: retry + [("confirm", "yes")], session: session)
            #expect(done.location == "/console/workers?done=waiting-retry&n=1")
            #expect(try await console.status().queue.delayedLater == 0, "the job waits no more")
        }
    }

    @Test func aSubscriptionShowsItsStateEntitlementAndEvents() async throws {
        try await ConsoleHarness.with { console in
            let record = try await console.subscriptionWithHistory()
            let session = try await console.logIn()
            let found = try await console.get("/console/subscriptions?q=\(record.originalTransactionID)", session: session)
            #expect(found.status == 303 && found.location == "/console/subscriptions/\(record.id)")
            let page = try await console.get("/console/subscriptions/\(record.id)", session: session)
            #expect(page.text(id: "subscription-status") == record.status?.rawValue)
            #expect(page.text(id: "subscription-entitlement")?.hasPrefix("active") == true)
            let events = try await console.onLedger { try $0.detail(id: record.id)!.events }
            #expect(!events.isEmpty)
            for stored in events { #expect(page.body.contains("<strong>\(stored.event.type.rawValue)</strong>")) }

            let verified = try await console.post("/console/subscriptions/\(record.id)/verify", ["csrf": session.csrf], session: session)
            #expect(verified.location == "/console/subscriptions/\(record.id)?done=verified")
            let attempts = try await console.onLedger { try $0.detail(id: record.id)!.verifications.count }
            #expect(attempts == 3, "the baseline, tonight's, and the operator's")
        }
    }

    /// The console reads its process's clock: on a deployment standing on a later day (a drill's
    /// shifted clock), a subscription past its expiry by then is shown without entitlement, and a
    /// job due before then as due since.
    @Test func theConsoleShowsItsProcesssNotTheSystemsNow() async throws {
        try await ConsoleHarness.with(configureFleet: { $0.scriptClock = .shifted }) { console in
            let record = try await console.subscriptionWithHistory()
            let until = try #require(record.entitlement(at: Date()).until)
            let session = try await console.logIn()
            let later = Int64(Date().timeIntervalSince1970 * 1000) + 3_600_000
            _ = try await console.onQueue { queue in
                try queue.schedule(Job(subscriptionID: record.id, runID: "push", reason: .notification, enqueuedAt: later), at: later)
            }
            let today = try await console.get("/console/subscriptions/\(record.id)", session: session)
            #expect(today.text(id: "subscription-entitlement")?.hasPrefix("active") == true)
            #expect(today.body.contains(#"<span class="message">due "#))

            let shift = (until.millisecondsSince1970 - Int64(Date().timeIntervalSince1970 * 1000) + 2 * 86_400_000) * 1_000
            let fleet = console.fleet
            try await onOwnThread {
                let redis = try RedisConnection(RedisConfiguration(url: fleet.redisURL))
                _ = try redis.command("SET", try QueueKeys(prefix: fleet.keyPrefix).timeShift, shift)
            }
            // The console reads the shift at most every tenth of a second.
            var page = today
            #expect(try await eventually(within: .seconds(10)) {
                page = try await console.get("/console/subscriptions/\(record.id)", session: session)
                return page.text(id: "subscription-entitlement") == "none"
            }, "\(page.text(id: "subscription-entitlement") ?? "-")")
            #expect(page.body.contains(#"<span class="message">due since "#))
        }
    }

    /// The customer's refund requests Apple asked about (CONSUMPTION_REQUEST) are on the
    /// subscription's page with what became of each: the answer Apple took, why none was sent, or
    /// that the deadline passed (issue 30, part 3).
    @Test func aSubscriptionShowsItsRefundRequestsAndWhatBecameOfThem() async throws {
        try await ConsoleHarness.with { console in
            let record = try await console.subscriptionWithHistory()
            let session = try await console.logIn()
            let before = try await console.get("/console/subscriptions/\(record.id)", session: session)
            #expect(before.status == 200 && !before.body.contains("refund-requests"), "no table without a request")

            let now = Date()
            let (subscription, original) = (record.id, record.originalTransactionID)
            try await console.onLedger { ledger in
                for (transaction, hoursAgo) in [("9100000000000001", 1.0), ("9100000000000002", 2.0), ("9100000000000003", 13.0)] {
                    try ledger.recordConsumptionRequest(ConsumptionRequestNotice(
                        dedupeKey: "v2:console-\(transaction)", app: record.app, environment: record.environment, transactionID: transaction,
                        originalTransactionID: original, subscriptionID: subscription, productType: PurchaseKind.autoRenewable.rawValue,
                        familyShared: false, reason: "OTHER", signedAt: now.addingTimeInterval(-hoursAgo * 3_600)), now: now)
                }
                let requests = try ledger.consumptionRequests(subscriptionID: subscription)
                let answer = ConsumptionAnswer(deliveryStatus: .delivered, sampleContentProvided: true, refundPreference: .decline)
                try ledger.recordConsumptionAnswered(id: requests.first { $0.transactionID == "9100000000000001" }!.id, body: answer.body, at: now)
                try ledger.recordConsumptionUnanswered(
                    id: requests.first { $0.transactionID == "9100000000000002" }!.id, reason: ConsumptionWithheld.noConsent.rawValue)
            }
            let page = try await console.get("/console/subscriptions/\(record.id)", session: session)
            func row(_ state: String) -> String? {
                guard let open = page.body.range(of: #"<tr data-state="\#(state)">"#),
                      let close = page.body[open.upperBound...].range(of: "</tr>") else { return nil }
                return String(page.body[open.upperBound..<close.lowerBound])
            }
            let answered = try #require(row("answered"), "\(page.body)")
            #expect(answered.contains("9100000000000001") && answered.contains("DELIVERED") && answered.contains("DECLINE"), "\(answered)")
            let unanswered = try #require(row("unanswered"))
            #expect(unanswered.contains("9100000000000002") && unanswered.contains("no_consent"), "\(unanswered)")
            let missed = try #require(row("missed"))
            #expect(missed.contains("9100000000000003") && missed.contains("the deadline passed unanswered"), "\(missed)")
            #expect(page.body.range(of: "9100000000000001")!.lowerBound < page.body.range(of: "9100000000000003")!.lowerBound,
                    "newest first")
        }
    }

    /// An operator extends a renewal date from the subscription's page: the form leads to a page
    /// that says what Apple will be asked, and only its confirmation asks; the check it queues
    /// announces renewal_extended.
    @Test func anExtensionIsConfirmedThenAskedAndAudited() async throws {
        try await ConsoleHarness.with(serverAPI: true) { console in
            let record = try await console.subscriptionWithHistory()
            let session = try await console.logIn()
            let page = try await console.get("/console/subscriptions/\(record.id)", session: session)
            #expect(page.body.contains("/console/subscriptions/\(record.id)/extend"))
            let form = ["csrf": session.csrf, "days": "5", "reason": "service-issue"]

            let confirm = try await console.post("/console/subscriptions/\(record.id)/extend", form, session: session)
            #expect(confirm.status == 200)
            #expect(confirm.text(id: "extend-ask")?.contains("extend it by 5 days (service-issue)") == true, "\(confirm.body)")
            #expect(try await console.onOwnDatabase { try $0.query("SELECT 1 FROM renewal_extensions").count } == 0, "asking needs the confirmation")
            #expect(try await console.post("/console/subscriptions/\(record.id)/extend", form.merging(["days": "91"]) { $1 }, session: session)
                .status == 400)

            // The confirmation page's form, sent three times at once (a double click, a retry): Apple
            // is asked once, and allows only two extensions a year.
            let confirmation = try #require(confirm.body.firstMatch(of: /name="confirmation" value="([0-9a-f]{64})"/)?.output.1)
            let confirmed = form.merging(["confirm": "yes", "confirmation": String(confirmation)]) { $1 }
            let sent = try await withThrowingTaskGroup(of: String?.self) { group in
                for _ in 0..<3 {
                    group.addTask { try await console.post("/console/subscriptions/\(record.id)/extend", confirmed, session: session).location }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(sent.count { $0 == "/console/subscriptions/\(record.id)?done=extended" } == 1, "\(sent)")
            #expect(sent.count { $0 == "/console/subscriptions/\(record.id)?done=already-confirmed" } == 2, "\(sent)")
            let audited = try await console.onLedger { try $0.auditTrail(action: "subscriptions.extend") }
            #expect(audited.map(\.via) == [.console] && audited.first?.actor == "ops-alice" && audited.first?.details["days"] == "5")

            let fleet = console.fleet
            try await onOwnThread { _ = try ImmediateVerification.run(subscriptionID: record.id, settings: fleet, logger: Logger(label: "console-test")) }
            let events = try await console.onLedger { try $0.detail(id: record.id)!.events.map(\.event.type) }
            #expect(events.contains(.renewalExtended))
        }
    }

    /// Support finds a customer's subscriptions by the account id the app registered them with, in
    /// the console's search box and with `subscriptions show --account`.
    @Test func subscriptionsAreFoundByAccount() async throws {
        try await ConsoleHarness.with { console in
            let ids = try await console.onOwnDatabase { database in
                try database.query("SELECT id FROM subscriptions ORDER BY id LIMIT 2").map { try $0["id"].int64()! }
            }
            try await console.onLedger { _ = try $0.linkAccount("user-8812", to: [ids[0]]) }
            let session = try await console.logIn()
            let one = try await console.get("/console/subscriptions?q=user-8812", session: session)
            #expect(one.status == 303 && one.location == "/console/subscriptions/\(ids[0])")
            try await console.onLedger { _ = try $0.linkAccount("user-8812", to: [ids[1]]) }
            let two = try await console.get("/console/subscriptions?q=user-8812", session: session)
            #expect(two.status == 200)
            for id in ids { #expect(two.body.contains(#"<a href="/console/subscriptions/\#(id)">\#(id)</a> (default, "#)) }
            #expect(two.body.contains("account user-8812"))
            #expect(try await console.get("/console/subscriptions?q=user-0000", session: session).status == 404)

            let environment = console.fleet.processEnvironment
            let shown = try await runFleetCommand(["subscriptions", "show", "--account", "user-8812"], environment: environment)
            #expect(shown.status == 0)
            #expect(shown.output.components(separatedBy: "account       user-8812").count - 1 == 2, "\(shown.output)")
            let none = try await runFleetCommand(["subscriptions", "show", "--account", "user-0000"], environment: environment)
            #expect(none.status == 1 && none.output.contains("No subscription is linked to account 'user-0000' in default."), "\(none.output)")
            #expect(!none.output.contains("Usage:"), "not a usage error: \(none.output)")
            let both = try await runFleetCommand(["subscriptions", "show", "1", "--account", "user-8812"], environment: environment)
            #expect(both.status != 0 && both.output.contains("Give one of: an id, --original-transaction-id, --account, --order."))
        }
    }

    /// Support pastes the order id from a customer's receipt email into the search box: Apple's
    /// Look Up Order ID names the transaction, and the console opens its subscription.
    @Test func theSearchBoxFindsASubscriptionByTheOrderIDOnApplesReceiptEmail() async throws {
        try await ConsoleHarness.with(serverAPI: true) { console in
            let record = try await console.subscriptionWithHistory()
            let order = try #require(UInt64(record.originalTransactionID).flatMap(SimulatedOrder.orderID(ofTransactionID:)))
            let session = try await console.logIn()
            let found = try await console.get("/console/subscriptions?q=\(order)", session: session)
            #expect(found.status == 303 && found.location == "/console/subscriptions/\(record.id)", "\(found.body)")
            let unknown = try await console.get("/console/subscriptions?q=MZZZZZZZZZ", session: session)
            #expect(unknown.status == 404 && unknown.body.contains("Apple knows no order MZZZZZZZZZ of default"), "\(unknown.body)")
            #expect(unknown.body.contains("production only"))
        }
        try await ConsoleHarness.with { console in
            let session = try await console.logIn()
            let noKey = try await console.get("/console/subscriptions?q=MQ5V6W7X8Y", session: session)
            #expect(noKey.status == 404 && noKey.body.contains("order ids are looked up once the Server API"), "\(noKey.body)")
        }
    }

    /// Each worker process with what it holds now, and the jobs waiting for a time.
    @Test func theWorkersPageShowsEachProcessAndTheDelayedJobs() async throws {
        try await ConsoleHarness.with { console in
            let session = try await console.logIn()
            #expect(try await console.get("/console/workers", session: session).text(id: "no-processes")?.hasPrefix("No worker process") == true)
            let fleet = console.fleet
            let held = try await onOwnThread {
                let connection = try RedisConnection(fleet.redisConfiguration())
                let keys = try QueueKeys(prefix: fleet.keyPrefix)
                let thread = try JobQueue(connection: connection, keys: keys, consumer: "box-7-4242-k3-0")
                try thread.enqueue(subscriptionIDs: [901, 902, 903], run: "busy", reason: .nightly)
                let held = try thread.reserve(count: 3, block: .zero)
                _ = try thread.retry(held[2], after: JobFailure(errorClass: "timeout", message: "no answer"))
                // A job not tried yet: one for an event, due in an hour.
                let later = Int64(Date().timeIntervalSince1970 * 1000) + 3_600_000
                try thread.schedule(Job(subscriptionID: 904, runID: "push", reason: .notification, enqueuedAt: later), at: later)
                try thread.reportProcess(WorkerProcess(name: "box-7-4242-k3", host: "box-7", pid: 4242, threads: 8,
                                                       startedAt: Int64(Date().timeIntervalSince1970 * 1000) - 600_000, jobsDone: 1234))
                return held.prefix(2).map(\.job.subscriptionID)
            }
            let page = try await console.get("/console/workers", session: session)
            #expect(page.body.contains(#"<tr data-process="box-7-4242-k3"><td>box-7</td><td>4242</td><td>8</td>"#))
            #expect(page.body.contains(#"<td class="jobs-done">1,234</td>"#))
            for id in held { #expect(page.body.contains(#"<a href="/console/subscriptions/\#(id)">\#(id)</a>"#)) }
            #expect(page.text(id: "delayed-count")?.hasPrefix("2 jobs wait for a time") == true)
            #expect(page.body.contains("<span class=\"kind\">nightly</span><span class=\"message\">attempt 1, first failed "))
            #expect(page.body.contains("<span class=\"kind\">notification</span><span class=\"message\">not tried yet</span>"))
        }
    }

    /// Waiting jobs ticked on the workers page are retried now, deleted or buried, once the operator
    /// confirmed how many; the audit trail names the action.
    @Test func waitingJobsAreActedOnAfterAConfirmation() async throws {
        try await ConsoleHarness.with { console in
            let session = try await console.logIn()
            let texts = try await console.onQueue { queue in
                try queue.enqueue(subscriptionIDs: [921, 922, 923], run: "waiting", reason: .nightly)
                for reserved in try queue.reserve(count: 3, block: .zero) {
                    _ = try queue.retry(reserved, after: JobFailure(errorClass: "timeout", message: "no answer"))
                }
                return try queue.delayedJobs().map(\.text)
            }
            let page = try await console.get("/console/workers", session: session)
            for text in texts { #expect(page.body.contains(#"<input type="checkbox" name="job" value="\#(text.replacingOccurrences(of: "|", with: "&#124;"))""#) || page.body.contains(#"value="\#(text)""#)) }

            let two = [("csrf", session.csrf), ("action", "delete"), ("job", texts[0]), ("job", texts[1])]
            let asked = try await console.post("/console/workers/waiting", fields: two, session: session)
            #expect(asked.status == 200 && asked.text(id: "waiting-question")?.hasPrefix("Delete 2 waiting jobs (subscriptions ") == true, "\(asked.body)")
            #expect(try await console.status().queue.delayedLater + console.status().queue.delayedDue == 3, "nothing done before the answer")
            let done = try await console.post("/console/workers/waiting", fields: two + [("confirm", "yes")], session: session)
            #expect(done.location == "/console/workers?done=waiting-delete&n=2")
            let after = try await console.get(try #require(done.location), session: session)
            #expect(after.text(id: "notice") == "2 waiting jobs deleted.")
            #expect(after.text(id: "delayed-count")?.hasPrefix("1 job waits for a time") == true)

            let buried = try await console.post(
                "/console/workers/waiting", fields: [("csrf", session.csrf), ("action", "bury"), ("job", texts[2]), ("confirm", "yes")], session: session)
            #expect(buried.location == "/console/workers?done=waiting-bury&n=1")
            #expect(try await console.status().queue.dead == 1)
            #expect(try await console.get("/console/dead", session: session).body.contains("an operator sent it here from the jobs waiting for a time"))
            let audit = try await console.get("/console/audit?action=jobs", session: session)
            #expect(audit.body.contains("jobs.delete") && audit.body.contains("jobs.bury"), "\(audit.body)")
            let unknown = try await console.post(
                "/console/workers/waiting", fields: [("csrf", session.csrf), ("action", "explode"), ("job", texts[2])], session: session)
            #expect(unknown.status == 400)
        }
    }

    /// Every waiting job a filter matches, after a page that says how many: changed, audited with the
    /// filter and the count confirmed; a stale form changes nothing.
    @Test func allWaitingJobsOfAFilterAreActedOnAfterAConfirmationThatSaysHowMany() async throws {
        try await ConsoleHarness.with { console in
            let session = try await console.logIn()
            try await console.onQueue { queue in
                try queue.enqueue(subscriptionIDs: Array(931...935), run: "bulk", reason: .nightly)
                for reserved in try queue.reserve(count: 5, block: .zero) {
                    _ = try queue.retry(reserved, after: JobFailure(errorClass: "timeout", message: "no answer"))
                }
                let later = Int64(Date().timeIntervalSince1970 * 1000) + 3_600_000
                try queue.schedule(Job(subscriptionID: 936, runID: "push", reason: .notification, enqueuedAt: later), at: later)
            }
            let filtered = try await console.get("/console/workers?tries=retried&run=bulk", session: session)
            #expect(filtered.text(id: "delayed-count")?.hasSuffix("matching run bulk, retries only: 1–5, the soonest due first.") == true,
                    "\(filtered.text(id: "delayed-count") ?? filtered.body)")
            #expect(filtered.body.contains(#"<option value="retried" selected>retries only</option>"#))
            #expect(!filtered.body.contains(">936<"), "the notification is not a retry")
            #expect(filtered.body.contains(#"<input type="hidden" name="tries" value="retried">"#), "the bulk actions keep the filter")

            let fields = [("csrf", session.csrf), ("action", "delete"), ("scope", "all"), ("run", "bulk"), ("tries", "retried")]
            let stale = try await console.post(
                "/console/workers/waiting", fields: [("csrf", String(repeating: "0", count: 64))] + fields.dropFirst() + [("confirm", "yes")],
                session: session)
            #expect(stale.status == 403)
            let asked = try await console.post("/console/workers/waiting", fields: fields, session: session)
            #expect(asked.status == 200 && asked.text(id: "waiting-question")?.hasPrefix("Delete 5 waiting jobs matching run bulk, retries only?") == true,
                    "\(asked.text(id: "waiting-question") ?? asked.body)")
            #expect(asked.body.contains(#"<input type="hidden" name="count" value="5">"#))
            // (A retry's jittered backoff may have run out meanwhile: due or later, each still waits.)
            let waiting = { () async throws -> Int in let queue = try await console.status().queue; return queue.delayedDue + queue.delayedLater }
            #expect(try await waiting() == 6, "nothing done before the answer, nor by the stale form")
            let done = try await console.post("/console/workers/waiting", fields: fields + [("count", "5"), ("confirm", "yes")], session: session)
            #expect(done.location == "/console/workers?done=waiting-delete&n=5")
            #expect(try await waiting() == 1)
            let trail = try await console.onLedger { try $0.auditTrail(action: "jobs") }
            let entry = try #require(trail.first)
            #expect(trail.count == 1 && entry.action == "jobs.delete" && entry.actor == "ops-alice" && entry.via == .console)
            #expect(entry.target == "all waiting jobs run=bulk tries=retried" && entry.details["confirmed"] == "5" && entry.details["acted"] == "5",
                    "\(entry)")

            // Nothing matching: the page says so and offers no button.
            let none = try await console.post(
                "/console/workers/waiting", fields: [("csrf", session.csrf), ("action", "retry"), ("scope", "all"), ("run", "bulk")], session: session)
            #expect(none.text(id: "waiting-question") == "No waiting job matching run bulk: nothing to do." && !none.body.contains("confirm-waiting"))
            #expect(try await console.get("/console/workers?tries=sometimes", session: session).status == 400)
            #expect(try await console.get("/console/workers?reason=nightly", session: session).status == 200)
        }
    }

    /// The queues one by one, and the queued jobs by their subscription's app, backend and priority.
    @Test func theQueuesPageShowsEachQueuesDepthAndTheJobsByAppAndBackend() async throws {
        try await ConsoleHarness.with { console in
            let session = try await console.logIn()
            let empty = try await console.get("/console/queues", session: session)
            #expect(empty.status == 200 && empty.text(id: "no-jobs") == "No job is queued.")
            #expect(empty.body.contains(#"<a href="/console/queues" aria-current="page">Queues</a>"#))
            let ids = try await console.onOwnDatabase { database in
                try database.query("SELECT id FROM subscriptions ORDER BY id").compactMap { try $0["id"].int64() }
            }
            try #require(ids.count >= 3)
            _ = try await console.onOwnDatabase { database in
                try database.execute("UPDATE subscriptions SET backend = 'server_api' WHERE id = $1", [.int64(ids[0])])
            }
            try await console.onQueue { queue in
                // A manual check of a subscription the ledger does not have, held by a worker, and one of
                // the second subscription, ready (so the sweep's enqueue skips it).
                try queue.enqueue(subscriptionIDs: [999_999, ids[1]], run: "manual", reason: .manual)
                _ = try queue.reserve(count: 1, block: .zero)
                try queue.enqueue(subscriptionIDs: ids, run: "queues", reason: .nightly)
            }
            let page = try await console.get("/console/queues", session: session)
            let normal = try #require(page.body.firstMatch(of: #/<tr id="queue-normal">.*?<td class="jobs">([^<]*)</td><td class="in-flight">([^<]*)</td><td class="oldest">([^<]*)</td>/#.dotMatchesNewlines()))
            #expect(normal.1 == "\(ids.count - 1)" && normal.2 == "0" && normal.3.hasPrefix("waited "), "\(normal.0)")
            let high = try #require(page.body.firstMatch(of: #/<tr id="queue-high">.*?<td class="jobs">([^<]*)</td><td class="in-flight">([^<]*)</td>/#.dotMatchesNewlines()))
            #expect(high.1 == "1" && high.2 == "1", "\(high.0)")
            #expect(page.text(id: "breakdown-scope")?.hasPrefix("Every job in the queue (\(ids.count + 1))") == true, "\(page.text(id: "breakdown-scope") ?? "")")
            // The oldest job's age to the second, not counted from the start of its minute.
            let oldest = try #require(page.text(id: "oldest-job")?.firstMatch(of: /was first enqueued (\d+) s ago; retries/), "\(page.text(id: "oldest-job") ?? "")")
            #expect(Int(oldest.1)! < 30, "enqueued a moment ago: \(oldest.0)")

            /// The cells of the breakdown's row for an app, backend and priority.
            func row(_ app: String, _ backend: String, _ priority: String) -> [String]? {
                let marker = #"<tr data-app="\#(app)" data-backend="\#(backend)" data-priority="\#(priority)">"#
                guard let start = page.body.range(of: marker), let end = page.body[start.upperBound...].range(of: "</tr>") else { return nil }
                return page.body[start.upperBound..<end.lowerBound].matches(of: #/<td[^>]*>([^<]*)</td>/#).map { String($0.1) }
            }
            let breakdown = page.body.firstRange(of: "breakdown-h").map { String(page.body[$0.lowerBound...]) } ?? page.body
            #expect(row("default", "server-api", "normal").map { Array($0[3...5]) } == ["1", "0", "0"], "\(breakdown)")
            #expect(row("default", "verify-receipt", "normal")?[3] == "\(ids.count - 2)", "\(breakdown)")
            #expect(row("default", "verify-receipt", "high").map { Array($0[3...4]) } == ["1", "0"], "the manual check, ready")
            #expect(row("not in the ledger", "–", "high").map { Array($0[3...4]) } == ["0", "1"], "held by a worker")
        }
    }

    /// A process whose heartbeat is late stays listed, marked silent, with the jobs it holds and when
    /// their leases run out; the overview names it as stopped, not starved. One that said goodbye is gone.
    @Test func aSilentWorkerStaysListedWithItsJobsAndTheirLeases() async throws {
        try await ConsoleHarness.with { console in
            let session = try await console.logIn()
            let fleet = console.fleet
            try await console.aSilentWorker(holding: 911)
            try await onOwnThread {
                let connection = try RedisConnection(fleet.redisConfiguration())
                let keys = try QueueKeys(prefix: fleet.keyPrefix)
                let gone = try JobQueue(connection: connection, keys: keys, consumer: "box-9-78-q2-0")
                try gone.reportProcess(WorkerProcess(name: "box-9-78-q2", host: "box-9", pid: 78, threads: 2, startedAt: 0, jobsDone: 5))
                try gone.forgetProcess("box-9-78-q2")
            }
            let page = try await console.get("/console/workers", session: session)
            #expect(page.body.contains(#"<tr data-process="box-9-77-q1" class="silent">"#), "\(page.body)")
            #expect(!page.body.contains("box-9-78-q2"), "a process that stopped cleanly is not listed")
            // The job was reserved on Redis's own clock just now: its lease runs out about a visibility timeout from now.
            let visibility = Int(fleet.visibilityTimeout.components.seconds)
            let note = try #require(page.body.firstMatch(
                of: /Silent for ([^:]+): stopped, frozen, cut off from Redis or dead\. It holds 1 job, whose lease runs out within (\d+) s, then other workers take them\./),
                "\(page.body)")
            #expect(note.1.hasSuffix(" s") || note.1.contains("min"), "\(note.0)")
            #expect((visibility - 30...visibility).contains(Int(note.2)!), "\(note.0)")
            // Above the table too, whole on a phone's width, with the subscriptions it holds.
            #expect(page.body.firstMatch(of: #/<p class="gate halted silent-note" data-process="box-9-77-q1">box-9, pid 77: Silent for .*?In hand: <a href="/console/subscriptions/911">911</a>/#.dotMatchesNewlines()) != nil, "\(page.body)")
            let overview = try await console.get("/console", session: session)
            let silent = try #require(overview.text(id: "silent-box-9-77-q1")?.firstMatch(of: /has not reported for (\d+) s/), "\(overview.body)")
            #expect((40..<100).contains(Int(silent.1)!), "silent since the heartbeat 40 s ago: \(silent.0)")
            #expect(!overview.body.contains("starved"))
            let status = try await onOwnThread { try FleetStatus.read(settings: fleet) }
            #expect(status.queue.silentWorkers.map(\.process) == ["box-9-77-q1"])
            #expect(status.text.firstMatch(of: /stopped       box-9-77-q1 has not reported for \d+ s .*; it holds 1 job, whose lease/) != nil, "\(status.text)")
        }
    }

    /// The audit trail, newest first, filtered by action and paged, as `receiptfleet audit` lists it.
    @Test func theAuditTrailIsInTheConsole() async throws {
        try await ConsoleHarness.with { console in
            try await console.onLedger { ledger in
                for index in 0..<105 {
                    try ledger.record(AuditRecord(actor: "root", via: .cli, action: "dead.replay", target: "run=\(index)", details: ["replayed": "\(index)"]))
                }
                try ledger.record(AuditRecord(actor: "bob", via: .api, action: "accounts.delete", target: "account x", outcome: "failed: gone"))
            }
            let session = try await console.logIn()
            let newest = try await console.get("/console/audit", session: session)
            #expect(newest.text(id: "audit-count") == "100 actions, newest first.")
            #expect(newest.body.contains("<td>bob <span class=\"muted\">(api)</span></td><td>accounts.delete</td>"))
            #expect(newest.body.contains(#"<td class="problem">failed: gone</td>"#))
            let filtered = try await console.get("/console/audit?action=dead", session: session)
            #expect(!filtered.body.contains("accounts.delete") && filtered.body.contains("replayed=104"))
            let older = try #require(filtered.body.firstMatch(of: #/href="([^"]+)" id="older-page"/#).map { String($0.1) })
            let second = try await console.get(older.replacingOccurrences(of: "&amp;", with: "&"), session: session)
            #expect(second.text(id: "audit-count") == "5 actions of dead, newest first, older than the last page.")
            #expect(second.body.contains("replayed=0") && !second.body.contains("replayed=5<"))
        }
    }

    @Test func webhooksShowTheirDeliveriesAndLatestFailures() async throws {
        try await ConsoleHarness.with { console in
            let record = try await console.subscriptionWithHistory()
            let (healthy, failing) = try await console.onOwnDatabase { database in
                let registry = WebhookRegistry.local(database)
                let healthy = try registry.add(url: "https://crm.example.com/hooks?tenant=s3cret", eventTypes: []).endpoint.id
                let failing = try registry.add(url: "https://billing.example.com/in", eventTypes: ["renewed"]).endpoint.id
                let event = try database.query("SELECT id::text AS id FROM events WHERE subscription_id = $1 LIMIT 1", [.int64(record.id)])[0]
                // One delivery made; one given up after the receiver answered 500, then did not answer at all.
                for (endpoint, state) in [(healthy, "delivered"), (failing, "failed")] {
                    let delivery = try database.query("""
                        INSERT INTO webhook_deliveries (endpoint_id, event_id, state, attempts, delivered_at)
                        VALUES ($1, $2::uuid, $3, 2, CASE WHEN $3 = 'delivered' THEN now() END) RETURNING id
                        """, [.int64(endpoint), .text(try event["id"].text() ?? ""), .text(state)])[0]["id"].int64() ?? 0
                    let attempts: [(Int?, String?)] = state == "delivered" ? [(204, nil)] : [(500, nil), (nil, "timed out after 10 s")]
                    for (status, error) in attempts {
                        try database.execute(
                            "INSERT INTO webhook_attempts (delivery_id, response_status, error, latency_ms) VALUES ($1, $2::integer, $3, 12)",
                            [.int64(delivery), status.map { .int64(Int64($0)) } ?? .null, error.map { .text($0) } ?? .null])
                    }
                }
                return (healthy, failing)
            }
            let session = try await console.logIn()
            let page = try await console.get("/console/webhooks", session: session)
            let first = try #require(page.section(id: "webhook-\(healthy)"))
            #expect(first.contains("<dt>Delivered</dt><dd>1</dd>") && first.contains("<dt>Failed</dt><dd>0</dd>"))
            #expect(!first.contains("s3cret") && first.contains("https://crm.example.com/hooks?…"), "a webhook's query is not shown")
            #expect(!first.contains("Latest failed attempts"))
            let second = try #require(page.section(id: "webhook-\(failing)"))
            #expect(second.contains("<dt>Failed</dt><dd>1</dd>") && second.contains("renewed"))
            #expect(second.contains("<td>500</td>") && second.contains("timed out after 10 s") && second.contains("no answer"))
        }
    }

    @Test func badInputGetsAPageNotATrace() async throws {
        try await ConsoleHarness.with { console in
            let session = try await console.logIn()
            for (path, status, title) in [
                ("/console/subscriptions?q=999999999", 404, "Not found"),
                ("/console/subscriptions/not-a-number", 404, "Not found"),
                ("/console/dead?subscription=-3", 400, "Cannot do that"),
                ("/console/no-such-page", 404, "Not found"),
            ] {
                let page = try await console.get(path, session: session)
                #expect(page.status == status, "\(path)")
                #expect(page.text(id: "error-title") == title, "\(path)")
                #expect(page.headers["Content-Type"]?.hasPrefix("text/html") == true, "\(path)")
            }
            let garbled = try await console.post("/console/gate/pause", ["csrf": session.csrf, "reason": "x"], session: session)
            #expect(garbled.status == 303, "a well-formed form still works")
            _ = try await console.post("/console/gate/resume", ["csrf": session.csrf, "confirm": "yes"], session: session)
            let verifyMissing = try await console.post("/console/subscriptions/999999/verify", ["csrf": session.csrf], session: session)
            #expect(verifyMissing.status == 404)
        }
    }

    /// Jobs and Apple's answers per minute over an hour, a day or a week, with their axes, from the
    /// minute samples: three hours of 120 verified, 6 retried and one dead every 10 minutes.
    @Test func theHistoryChartsDrawRatesPerMinuteWithAxes() async throws {
        try await ConsoleHarness.with { console in
            let fleet = console.fleet
            let now = try await console.replaceMinuteSamples(180) { minute in
                "3 1 0 0 0 \(1_000 + minute * 120) \(minute * 6) \(minute / 10)|0:120,21005:6"
            }
            _ = try await onOwnThread {
                // A counter that fell (Redis lost it) draws no rate for that step.
                try RedisConnection(fleet.redisConfiguration()).command(
                    "ZADD", "\(fleet.keyPrefix):console:minutes", now - 30_000, "\(now - 30_000)|3 1 0 0 0 5 0 0|0:120,21005:6")
            }
            let session = try await console.logIn()
            func axis(_ page: ConsoleHarness.Reply, _ figure: String) -> [String] {
                guard let match = page.body.firstMatch(of: try! Regex(#"id="\#(figure)".*?<div class="y-axis" aria-hidden="true"><span>([^<]*)</span>.*?<div class="x-axis" aria-hidden="true"><span>([^<]*)</span><span>([^<]*)</span><span>([^<]*)</span>"#).dotMatchesNewlines())
                else { return [] }
                return (1...4).compactMap { match.output[$0].substring.map(String.init) }
            }
            let day = try await console.get("/console?window=24h", session: session)
            let jobs = axis(day, "jobs-chart")
            #expect(jobs.first == "120", "the peak is 120 verified a minute: \(jobs)")
            #expect(jobs.count == 4 && jobs[1].wholeMatch(of: /\d\d:\d\d/) != nil && jobs[3] == "now", "\(jobs)")
            #expect(day.body.contains(#"<li class="s-verified">verified</li><li class="s-retried">retried</li><li class="s-dead">dead</li>"#))
            #expect(axis(day, "answers-chart").first == "120")
            #expect(day.body.contains("<li class=\"s-retried\">21005 (Apple&#39;s server was unavailable)</li>"))
            #expect(day.body.contains(#"<strong>last 24 hours</strong>"#))
            let week = axis(try await console.get("/console?window=7d", session: session), "jobs-chart")
            #expect(week.count == 4 && week[1].wholeMatch(of: /\d\d-\d\d \d\d:\d\d/) != nil, "over a week the time axis has dates: \(week)")
            let hour = try await console.get("/console", session: session)
            #expect(hour.body.contains(#"<strong>last hour</strong>"#) && hour.body.contains(#"<a href="/console?window=7d">last 7 days</a>"#))
            #expect(axis(hour, "jobs-chart").first == "120")
        }
    }

    /// The y axis and caption of the chart in the figure with this id.
    static func chartAxis(_ page: ConsoleHarness.Reply, _ figure: String) -> (peak: String, caption: String)? {
        let pattern = try! Regex(#"id="\#(figure)">\s*<figcaption>([^<]*)</figcaption>.*?<div class="y-axis" aria-hidden="true"><span>([^<]*)</span>"#)
        guard let match = page.body.firstMatch(of: pattern.dotMatchesNewlines()),
              let caption = match.output[1].substring, let peak = match.output[2].substring
        else { return nil }
        return (String(peak), String(caption).replacingOccurrences(of: "&#39;", with: "'"))
    }

    /// One series whose hour view peaked at 2,594 and whose day view showed 35 (issue 46): every
    /// window takes a gauge's peak in each bucket now, and every caption says what a point is.
    @Test func anHoursAndADaysPointsOfASeriesAgreeAndSayWhatTheyAre() async throws {
        try await ConsoleHarness.with { console in
            // 35 jobs not yet done each minute but one, when 2,594 were: a burst drained within minutes.
            _ = try await console.replaceMinuteSamples(50) { minute in
                "\(minute == 20 ? 2_594 : 35) 0 0 0 \(minute * 600) \(minute * 10) 0 0|0:10"
            }
            let session = try await console.logIn()
            for (window, bucket) in [("1h", "minute"), ("24h", "5 minutes"), ("7d", "hour")] {
                let page = try await console.get("/console?window=\(window)", session: session)
                let depth = try #require(Self.chartAxis(page, "depth-chart"), "no depth chart over \(window)")
                #expect(depth.peak == "2,594", "over \(window) the chart peaks at \(depth.peak)")
                #expect(depth.caption.hasSuffix("each point is the peak of the minute samples in its \(bucket)"), "\(depth.caption)")
                // 600 tokens a minute: 10 a second, whatever the bucket.
                let rate = try #require(Self.chartAxis(page, "rate-chart"))
                #expect(rate.peak == "10" && rate.caption.hasSuffix("each point is the average rate over its \(bucket)"), "\(rate)")
                let jobs = try #require(Self.chartAxis(page, "jobs-chart"))
                #expect(jobs.peak == "10" && jobs.caption.hasSuffix("each point is the average per minute over its \(bucket)"), "\(jobs)")
                let answers = try #require(Self.chartAxis(page, "answers-chart"))
                #expect(answers.caption.hasSuffix("each point is the average per minute over its \(bucket)"), "\(answers)")
            }
        }
    }

    /// The seconds a Timings cell shows ("198 ms", "1.5 s", "40 s", "2 min", "2.1 h").
    static func seconds(_ shown: String) -> Double? {
        let parts = shown.split(separator: " ")
        guard parts.count == 2, let value = Double(parts[0]) else { return nil }
        return switch parts[1] {
        case "ms": value / 1_000
        case "s": value
        case "min": value * 60
        case "h": value * 3_600
        default: nil
        }
    }

    /// The cells of the Timings table's row for `series`: name, count, p50, p99, mean.
    static func timingRow(_ page: ConsoleHarness.Reply, _ table: String, _ series: String) -> [String]? {
        let pattern = try! Regex(#"<table id="\#(table)">.*?<tr data-series="\#(series)">(.*?)</tr>"#).dotMatchesNewlines()
        guard let row = page.body.firstMatch(of: pattern)?.output[1].substring else { return nil }
        return row.matches(of: #/<td>(.*?)</td>/#).map { String($0.output.1) }
    }

    /// Whether a shown timing is within the bucket (19 % wide, and rounded as shown) of `duration`.
    static func inBucket(_ shown: String?, of duration: Duration) -> Bool {
        guard let seconds = shown.flatMap(Self.seconds) else { return false }
        let bucket = TimingHistogram.bucket(of: duration)
        let (lower, upper) = (TimingHistogram.upperBound(of: bucket - 1) / .seconds(1), TimingHistogram.upperBound(of: bucket) / .seconds(1))
        return seconds >= lower * 0.95 && seconds <= upper * 1.05
    }

    /// The fleet's timings as the processes' reporters add them: this minute, three hours ago and
    /// two days ago. Each window counts what falls in it, per endpoint and for jobs, fleet-wide.
    @Test func theTimingsPageShowsEachEndpointAndJobsOverEachWindow() async throws {
        try await ConsoleHarness.with { console in
            let fleet = console.fleet
            let now = Int64(Date().timeIntervalSince1970 * 1000)
            try await onOwnThread {
                let timings = FleetTimings(connection: try RedisConnection(fleet.redisConfiguration()), keys: try QueueKeys(prefix: fleet.keyPrefix))
                func histogram(_ timed: [(Duration, Int)]) -> TimingHistogram {
                    timed.reduce(into: TimingHistogram()) { histogram, timing in for _ in 0..<timing.1 { histogram.record(timing.0) } }
                }
                // Two processes this minute: 98 verifyReceipt calls of 200 ms and 2 of 8 s; 50 jobs of 40 s.
                try timings.add(["verify_receipt": histogram([(.milliseconds(200), 98)]), "jobs": histogram([(.seconds(40), 50)])], at: now)
                try timings.add(["verify_receipt": histogram([(.seconds(8), 2)])], at: now)
                // Three hours ago: 30 Server API calls of 1.5 s and 50 jobs of 2 hours; two days ago 10 jobs of 5 hours.
                try timings.add(["subscription_statuses": histogram([(.milliseconds(1_500), 30)]), "jobs": histogram([(.seconds(7_200), 50)])],
                                at: now - 3 * 3_600_000)
                try timings.add(["jobs": histogram([(.seconds(18_000), 10)])], at: now - 2 * 86_400_000)
            }
            let session = try await console.logIn()

            let hour = try await console.get("/console/timings", session: session)
            #expect(hour.status == 200 && hour.body.contains(#"<a href="/console/timings" aria-current="page">Timings</a>"#))
            let calls = try #require(Self.timingRow(hour, "apple-timings", "verify_receipt"))
            #expect(calls[0] == "verify receipt" && calls[1] == "100", "\(calls)")
            #expect(Self.inBucket(calls[2], of: .milliseconds(200)) && Self.inBucket(calls[3], of: .seconds(8)), "p50, p99: \(calls)")
            #expect(Self.timingRow(hour, "apple-timings", "subscription_statuses") == nil, "no call in the last hour")
            let jobs = try #require(Self.timingRow(hour, "job-timings", "jobs"))
            #expect(jobs[1] == "50" && Self.inBucket(jobs[2], of: .seconds(40)) && Self.inBucket(jobs[3], of: .seconds(40)), "\(jobs)")
            #expect(Self.chartAxis(hour, "jobs-timing-chart")?.caption.hasSuffix("each point is the p50 and p99 of the jobs done in its minute") == true)
            #expect(hour.body.contains(#"<figure class="distribution" data-series="verify_receipt">"#))

            let day = try await console.get("/console/timings?window=24h", session: session)
            let statuses = try #require(Self.timingRow(day, "apple-timings", "subscription_statuses"))
            #expect(statuses[1] == "30" && Self.inBucket(statuses[2], of: .milliseconds(1_500)), "\(statuses)")
            #expect(Self.timingRow(day, "apple-timings", "verify_receipt")?[1] == "100")
            let dayJobs = try #require(Self.timingRow(day, "job-timings", "jobs"))
            #expect(dayJobs[1] == "100" && Self.inBucket(dayJobs[2], of: .seconds(40)) && Self.inBucket(dayJobs[3], of: .seconds(7_200)), "\(dayJobs)")
            let apple = try #require(Self.chartAxis(day, "apple-timing-chart"))
            #expect(apple.caption.hasSuffix("each point is the p99 of the calls in its hour"), "\(apple.caption)")
            #expect(day.body.contains(#"<strong>last 24 hours</strong>"#))

            let week = try await console.get("/console/timings?window=7d", session: session)
            let weekJobs = try #require(Self.timingRow(week, "job-timings", "jobs"))
            #expect(weekJobs[1] == "110" && Self.inBucket(weekJobs[3], of: .seconds(18_000)), "\(weekJobs)")
        }
    }

    @Test func everyReplicaKeepsOneSamplePerInterval() async throws {
        try await ConsoleHarness.with(replicas: 3) { console in
            let key = "\(console.fleet.keyPrefix):console:samples"
            let fleet = console.fleet
            // Each replica samples when it starts; with the harness's long interval all three fall in one bucket.
            let samples = { try await onOwnThread { Int(try RedisConnection(fleet.redisConfiguration()).command("ZCARD", key).int ?? 0) } }
            try await eventually(within: .seconds(5), every: .milliseconds(50)) { try await samples() > 0 }
            // Real time: the other replicas' first samples, which must not add to the bucket, come meanwhile.
            try await Task.sleep(for: .milliseconds(500))
            #expect(try await samples() == 1)
        }
    }
}

/// `receiptfleet console` as operators start it.
@Suite struct ConsoleCommandTests {
    @Test func theCommandServesTheConsoleAloneAndRefusesWithoutOperatorTokens() async throws {
        try await ConsoleHarness.with { console in
            let environment = console.fleet.processEnvironment.merging(["RECEIPTFLEET_METRICS_ADDRESS": "off"]) { $1 }
            let refused = try await runFleetCommand(["console", "--address", "127.0.0.1:0"], environment: environment)
            #expect(refused.status != 0)
            #expect(refused.output.contains("the console needs operator tokens: set RECEIPTFLEET_CONSOLE_TOKENS"))

            let token = "cli-operator-token-0123456789abcdef"
            let process = try FleetProcess(
                ["console", "--address", "127.0.0.1:0"], environment: environment.merging(["RECEIPTFLEET_CONSOLE_TOKENS": "cli-ops:\(token)"]) { $1 })
            var port: Int?
            try await eventually(within: .seconds(10), every: .milliseconds(50)) {
                port = process.log.firstMatch(of: /http:\/\/127\.0\.0\.1:(\d+)\/console/).flatMap { Int($0.1) }
                return port != nil
            }
            let bound = try #require(port, "the console did not say where it listens:\n\(process.log)")
            let root = try await onOwnThread { try HTTPClient().get(url: "http://127.0.0.1:\(bound)/") }
            #expect(root.status == 303 && root.headers["Location"] == "/console")
            let login = try await onOwnThread {
                try HTTPClient().post(url: "http://127.0.0.1:\(bound)/console/login", json: Array("token=\(token)".utf8),
                                      headers: ["Content-Type": "application/x-www-form-urlencoded"])
            }
            #expect(login.status == 303)
            process.send(SIGTERM)
            #expect(try await process.exitStatus(within: .seconds(10)) == 0)
            #expect(!process.log.contains(token))
        }
    }
}
