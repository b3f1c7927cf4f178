@testable import AppStoreSimulator
import Foundation
import Testing

/// The keys Apple sends, as recorded in real responses (shared/fixtures/appstore) and documented for
/// responseBody, Latest_receipt_info and Pending_renewal_info.
enum AppleKeys {
    static let top: Set = ["status", "environment", "receipt", "latest_receipt_info", "latest_receipt", "pending_renewal_info"]
    static let receipt: Set = [
        "receipt_type", "adam_id", "app_item_id", "bundle_id", "application_version", "download_id",
        "version_external_identifier", "receipt_creation_date", "receipt_creation_date_ms", "receipt_creation_date_pst",
        "request_date", "request_date_ms", "request_date_pst", "original_purchase_date", "original_purchase_date_ms",
        "original_purchase_date_pst", "original_application_version", "in_app",
    ]
    static let transaction: Set = [
        "quantity", "product_id", "transaction_id", "original_transaction_id", "purchase_date", "purchase_date_ms",
        "purchase_date_pst", "original_purchase_date", "original_purchase_date_ms", "original_purchase_date_pst",
        "expires_date", "expires_date_ms", "expires_date_pst", "web_order_line_item_id", "is_trial_period",
        "is_in_intro_offer_period", "in_app_ownership_type",
    ]
    /// What a subscription period has and a non-consumable lacks.
    static let subscriptionOnly: Set = [
        "expires_date", "expires_date_ms", "expires_date_pst", "web_order_line_item_id", "is_in_intro_offer_period",
    ]
    static let optionalTransaction: Set = [
        "cancellation_date", "cancellation_date_ms", "cancellation_date_pst", "cancellation_reason", "is_upgraded",
        "subscription_group_identifier", "offer_code_ref_name",
    ]
    static let renewal: Set = ["auto_renew_product_id", "original_transaction_id", "product_id", "auto_renew_status"]
    static let optionalRenewal: Set = [
        "expiration_intent", "is_in_billing_retry_period", "grace_period_expires_date", "grace_period_expires_date_ms",
        "grace_period_expires_date_pst", "price_consent_status", "offer_code_ref_name",
    ]
}

@Suite("verifyReceipt wire format")
struct WireFormatTests {
    static let validKinds = LifecycleKind.allCases.filter { $0 != .malformed && $0 != .deletedAccount }

    @Test("answers use Apple's names and string encodings", arguments: validKinds)
    func appleShape(kind: LifecycleKind) async throws {
        let simulator = try makeSimulator()
        try await withClient(simulator) { client in
            for now in stride(from: anchorMs, through: anchorMs + 90 * day, by: Int(30 * day)) {
                try await setClock(client, to: now)
                let json = try await verifyJSON(client, receipt(kind))
                #expect(Set(json.keys) == AppleKeys.top)
                #expect(json["status"] as? Int == 0)
                #expect(json["environment"] as? String == kind.environment.rawValue)
                let receiptObject = try #require(json["receipt"] as? [String: Any])
                #expect(Set(receiptObject.keys) == AppleKeys.receipt)
                #expect(receiptObject["receipt_type"] as? String == (kind == .sandbox ? "ProductionSandbox" : "Production"))
                #expect(receiptObject["adam_id"] is Int, "adam_id is a JSON number, as Apple sends it")
                try checkDates(receiptObject, ["receipt_creation_date", "request_date", "original_purchase_date"])

                let inApp = try #require(receiptObject["in_app"] as? [[String: Any]])
                let latest = try #require(json["latest_receipt_info"] as? [[String: Any]])
                #expect(!inApp.isEmpty && !latest.isEmpty)
                for entry in inApp + latest { try checkTransaction(entry) }
                // A non-consumable (lifetime_purchase) belongs to no subscription group.
                #expect(latest.allSatisfy { $0["subscription_group_identifier"] is String || $0["expires_date"] == nil })
                let purchases = latest.map { Int64($0["purchase_date_ms"] as! String)! }
                #expect(purchases == purchases.sorted(by: >), "latest_receipt_info is newest first")

                for renewal in try #require(json["pending_renewal_info"] as? [[String: Any]]) {
                    #expect(AppleKeys.renewal.isSubset(of: renewal.keys))
                    #expect(Set(renewal.keys).isSubset(of: AppleKeys.renewal.union(AppleKeys.optionalRenewal)))
                    #expect(renewal.values.allSatisfy { $0 is String }, "pending_renewal_info values are strings")
                    #expect(["0", "1"].contains(renewal["auto_renew_status"] as? String))
                }
                let latestReceipt = try #require(json["latest_receipt"] as? String)
                #expect(SimulatedReceipt(receiptData: latestReceipt)?.token.index == receipt(kind).token.index)
            }
        }
    }

    func checkTransaction(_ entry: [String: Any]) throws {
        // A non-consumable has no expiry and none of a subscription period's fields.
        let oneTime = entry["product_id"] as? String == SimulatedLifetimePurchase.productID
        let required = oneTime ? AppleKeys.transaction.subtracting(AppleKeys.subscriptionOnly) : AppleKeys.transaction
        #expect(required.isSubset(of: entry.keys), "missing \(required.subtracting(entry.keys))")
        #expect(Set(entry.keys).isSubset(of: AppleKeys.transaction.union(AppleKeys.optionalTransaction)))
        #expect(entry.values.allSatisfy { $0 is String }, "every transaction value is a string")
        for key in ["quantity", "transaction_id", "original_transaction_id"] + (oneTime ? [] : ["web_order_line_item_id"]) {
            #expect((entry[key] as? String).flatMap { UInt64($0) } != nil, "\(key) is a decimal string")
        }
        for key in ["is_trial_period"] + (oneTime ? [] : ["is_in_intro_offer_period"]) {
            #expect(["true", "false"].contains(entry[key] as? String))
        }
        #expect(["PURCHASED", "FAMILY_SHARED"].contains(entry["in_app_ownership_type"] as? String))
        try checkDates(entry, ["purchase_date", "original_purchase_date"] + (oneTime ? [] : ["expires_date"]))
        if entry["cancellation_date"] != nil { try checkDates(entry, ["cancellation_date"]) }
    }

    /// Each date comes three ways, and they name the same second.
    func checkDates(_ object: [String: Any], _ names: [String]) throws {
        for name in names {
            let gmt = try #require(object[name] as? String)
            let milliseconds = try #require((object[name + "_ms"] as? String).flatMap { Int64($0) })
            let pacific = try #require(object[name + "_pst"] as? String)
            #expect(gmt == Self.format(milliseconds, zone: "GMT") + " Etc/GMT")
            #expect(pacific == Self.format(milliseconds, zone: "America/Los_Angeles") + " America/Los_Angeles")
        }
    }

    static func format(_ milliseconds: Int64, zone: String) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: zone)
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss"
        return formatter.string(from: Date(timeIntervalSince1970: Double(milliseconds) / 1000))
    }

    @Test("dates match Apple's recorded spellings, standard and daylight time")
    func recordedDates() async throws {
        // From the recorded production answer: a PST date and a PDT date.
        #expect(Self.render(1_489_195_343_000) == ["2017-03-11 01:22:23 Etc/GMT", "2017-03-10 17:22:23 America/Los_Angeles"])
        #expect(Self.render(1_491_870_143_000) == ["2017-04-11 00:22:23 Etc/GMT", "2017-04-10 17:22:23 America/Los_Angeles"])
        // Across twenty years of random instants, Pacific time agrees with the time-zone database.
        var random = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            let milliseconds = Int64.random(in: 1_199_145_600_000...1_830_297_600_000, using: &random) / 1000 * 1000
            #expect(Self.render(milliseconds)[1] == Self.format(milliseconds, zone: "America/Los_Angeles") + " America/Los_Angeles")
        }
    }

    /// GMT and Pacific spellings as the simulator writes them.
    static func render(_ milliseconds: Int64) -> [String] {
        var gmt: [UInt8] = []
        AppleDate.appendGMT(milliseconds, to: &gmt)
        var pacific: [UInt8] = []
        AppleDate.appendPacific(milliseconds, to: &pacific)
        return [String(decoding: gmt, as: UTF8.self), String(decoding: pacific, as: UTF8.self)]
    }
}
