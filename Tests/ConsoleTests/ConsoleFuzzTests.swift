import Foundation
import JobQueue
import PostgresClient
import TestSupport
import Testing

/// Every console route and parameter with what a careless or hostile caller sends: numbers past
/// every bound, negative and non-numbers, stream ids Redis refuses, long and combining text. The
/// console answers each with a page (400 or 404 where the value is wrong), never with a server
/// error, and is still up afterwards: the next overflow is found here, not by a caller.
@Suite struct ConsoleFuzzTests {
    static let values: [String] = [
        "9223372036854775807", "9223372036854775808", "-9223372036854775808", "-1", "0", "99999999999999999999999",
        "99999999999999999999999-99999999999999999999", "18446744073709551615-18446744073709551615", "1-1-1", "-", "1e9",
        "0x10", "NaN", "abc", "", " ", "%00", "%ff%fe", "../..", "<script>alert(1)</script>", "'; DROP TABLE subscriptions; --",
        "a" + String(repeating: "\u{0301}", count: 6_000), String(repeating: "9", count: 4_000),
    ]

    static func encoded(_ value: String) -> String {
        value.hasPrefix("%") ? value : value.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
    }

    @Test func noParameterValueMakesTheConsoleFail() async throws {
        try await ConsoleHarness.with { console in
            let session = try await console.logIn()
            var failures: [String] = []
            func check(_ what: String, _ status: Int) {
                if status >= 500 || status == 0 { failures.append("\(status) for \(what)") }
            }
            let gets: [(path: String, parameters: [String])] = [
                ("/console", ["window"]), ("/console/dead", ["after", "error_class", "run", "subscription", "q"]),
                ("/console/subscriptions", ["q"]), ("/console/workers", ["from", "reason", "run", "tries"]), ("/console/queues", ["x"]), ("/console/audit", ["before", "action"]),
                ("/console/webhooks", ["page"]),
            ]
            for value in Self.values {
                for (path, parameters) in gets {
                    for parameter in parameters {
                        let url = "\(path)?\(parameter)=\(Self.encoded(value))"
                        check("GET \(url.prefix(120))", try await console.get(url, session: session).status)
                    }
                }
                let segment = Self.encoded(value)
                check("GET /console/subscriptions/\(segment.prefix(60))", try await console.get("/console/subscriptions/\(segment)", session: session).status)
                let posts: [(path: String, form: [String: String])] = [
                    ("/console/subscriptions/\(segment)/extend", ["days": value, "reason": value]),
                    ("/console/subscriptions/1/extend", ["days": value, "reason": "service-issue"]),
                    ("/console/subscriptions/\(segment)/verify", [:]),
                    ("/console/dead/replay", ["id": value]), ("/console/dead/purge", ["id": value, "confirm": "yes"]),
                    ("/console/dead/replay", ["subscription": value]), ("/console/dead/replay", ["error_class": value, "run": value, "q": value]),
                    ("/console/dead/replay", ["q": value, "confirm": "yes"]),
                    ("/console/workers/waiting", ["action": value, "job": value]), ("/console/workers/waiting", ["action": "delete", "job": value, "confirm": "yes"]),
                    ("/console/workers/waiting", ["action": "retry", "scope": "all", "reason": value, "run": value, "tries": value]),
                    ("/console/workers/waiting", ["action": "delete", "scope": "all", "run": value, "count": value, "confirm": "yes"]),
                ]
                for (path, form) in posts {
                    let reply = try await console.post(path, form.merging(["csrf": session.csrf]) { $1 }, session: session)
                    check("POST \(path.prefix(80)) \(form.mapValues { $0.prefix(40) })", reply.status)
                }
            }
            #expect(failures.isEmpty, "\(failures.count) server errors:\n\(failures.prefix(20).joined(separator: "\n"))")
            #expect(try await console.get("/console/login").status == 200, "the console still answers")
        }
    }

    /// Markup in everything the console shows that an outsider chose: an account id (any API
    /// caller's), a product id (from Apple's answer, or a forged one), a dead letter's message,
    /// an operator's extension reason. Every page shows it as text, never as markup.
    @Test func markupFromOutsidersIsShownAsText() async throws {
        let hostile = #"x"><img src=x onerror=alert(1)><script>alert('rf')</script>"#
        try await ConsoleHarness.with { console in
            let record = try await console.subscriptionWithHistory()
            try await console.onOwnDatabase { connection in
                try connection.execute("""
                    UPDATE subscriptions SET account_id = $2, product_id = $2, state = jsonb_set(state, '{product_id}', to_jsonb($2::text))
                    WHERE id = $1
                    """, [.int64(record.id), .text(hostile)])
            }
            try await console.onQueue { queue in
                try queue.enqueue(subscriptionIDs: [record.id], run: "hostile", reason: .manual)
                let reserved = try queue.reserve(count: 1, block: .milliseconds(100))[0]
                try queue.bury(reserved, failure: JobFailure(errorClass: "apple.21010", message: hostile))
            }
            let session = try await console.logIn()
            let account = Self.encoded(hostile)
            let pages = [
                "/console", "/console/subscriptions/\(record.id)", "/console/subscriptions?account=\(account)",
                "/console/subscriptions?q=\(account)", "/console/dead", "/console/dead?error_class=\(account)", "/console/workers",
                "/console/workers?run=\(account)", "/console/queues",
                "/console/audit", "/console/audit?action=\(account)",
            ]
            var shown = 0
            for path in pages {
                let page = try await console.get(path, session: session)
                #expect(!page.body.contains("<img src=x") && !page.body.contains("<script>alert"), "markup on \(path)")
                if page.body.contains("&lt;img src=x onerror=alert(1)&gt;") { shown += 1 }
            }
            #expect(shown >= 3, "the subscription's page, its account's and the dead letters show the text")
        }
    }
}
