import Foundation
import Testing

/// `DELETE /v1/accounts/{id}`: an account's subscriptions go, with a tombstone each for the
/// consumers, another account's stay, the deletion is in the audit trail under the caller's
/// token name, and deleting again is harmless.
@Suite struct AccountDeletionTests {
    @Test func deletingAnAccountForgetsItsSubscriptionsOnceAndIsAudited() async throws {
        try await APIHarness.with { api in
            // An account id with characters a path must percent-encode.
            for (index, account) in [(0, "user@example.com"), (1, "user@example.com"), (2, "someone-else")] {
                let registered = try await api.post("/v1/receipts", ["receipt": api.receipt(index: index).receiptData, "account_id": account])
                #expect(registered.status == 200, "\(String(decoding: registered.body, as: UTF8.self))")
            }
            let mine = try #require(try await api.get("/v1/subscriptions?account_id=user%40example.com").json["subscriptions"] as? [[String: Any]])
            let ids = mine.compactMap { $0["id"] as? Int }.sorted()
            #expect(!ids.isEmpty)
            let othersBefore = try await api.count("SELECT count(*) AS n FROM subscriptions WHERE account_id = 'someone-else'")

            #expect(try await api.delete("/v1/accounts/user%40example.com", auth: .none).status == 401)
            let deleted = try await api.delete("/v1/accounts/user%40example.com")
            #expect(deleted.status == 200, "\(String(decoding: deleted.body, as: UTF8.self))")
            #expect(deleted.json["account_id"] as? String == "user@example.com")
            #expect((deleted.json["forgotten_subscriptions"] as? [Int])?.sorted() == ids)

            #expect((try await api.get("/v1/subscriptions?account_id=user%40example.com").json["subscriptions"] as? [Any])?.isEmpty == true)
            #expect(try await api.count("SELECT count(*) AS n FROM subscriptions WHERE account_id = 'someone-else'") == othersBefore)
            #expect(try await api.count("SELECT count(*) AS n FROM receipts WHERE subscription_id IN (\(ids.map(String.init).joined(separator: ",")))") == 0)
            #expect(try await api.count("SELECT count(*) AS n FROM events WHERE type = 'subscription_forgotten'") == ids.count)
            #expect(try await api.count("""
                SELECT count(*) AS n FROM audit_log WHERE action = 'subscriptions.forget' AND actor = 'tester' AND via = 'api'
                  AND target = 'account=user@example.com app=default' AND outcome = 'ok' AND details->>'subscriptions' = '\(ids.count)'
                """) == 1)

            let again = try await api.delete("/v1/accounts/user%40example.com")
            #expect(again.status == 200)
            #expect((again.json["forgotten_subscriptions"] as? [Any])?.isEmpty == true)
            #expect(try await api.count("SELECT count(*) AS n FROM events WHERE type = 'subscription_forgotten'") == ids.count)
        }
    }
}
