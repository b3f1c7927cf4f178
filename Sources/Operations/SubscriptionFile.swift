import AppStore
import FleetConfiguration
import Foundation
import Ledger

/// Reads subscription files: JSON lines or CSV with a header. Each line is judged alone, bytes
/// first: a line that is not UTF-8, or whose fields hold a control character (a NUL, which
/// PostgreSQL refuses in text), is reported by its number and the others are kept.
public enum SubscriptionFile {
    /// Each line's app is its `app`, else the app of its `bundle_id`, else the deployment's one app.
    public static func parse(_ data: Data, csv: Bool, apps: AppCatalog) -> ([NewSubscription], [String]) {
        var lines = data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
            .map { String(validating: $0.last == UInt8(ascii: "\r") ? $0.dropLast() : $0, as: UTF8.self) }
        var header: [String] = []
        var problems: [String] = []
        if csv, !lines.isEmpty {
            guard let first = lines.removeFirst() else { return ([], ["line 1: the header is not UTF-8 text"]) }
            header = first.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        }
        var subscriptions: [NewSubscription] = []
        for (index, line) in lines.enumerated() {
            let number = index + (csv ? 2 : 1)
            guard let line else {
                problems.append("line \(number): not UTF-8 text")
                continue
            }
            guard !line.trimmingCharacters(in: .whitespaces).isEmpty else { continue }
            let fields: [String: String]
            if csv {
                let values = line.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
                guard values.count == header.count else {
                    problems.append("line \(number): \(values.count) fields where the header has \(header.count)")
                    continue
                }
                fields = Dictionary(zip(header, values), uniquingKeysWith: { first, _ in first })
            } else {
                guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
                    problems.append("line \(number): not a JSON object")
                    continue
                }
                fields = object.compactMapValues { $0 is NSNull ? nil : "\($0)" }
            }
            guard !fields.values.contains(where: { $0.unicodeScalars.contains { $0.properties.generalCategory == .control } }) else {
                problems.append("line \(number): a field holds a control character (a NUL?), which the ledger cannot store")
                continue
            }
            guard let id = fields["original_transaction_id"], !id.isEmpty else {
                problems.append("line \(number): original_transaction_id is missing")
                continue
            }
            guard let receipt = fields["receipt"] ?? fields["receipt_data"], !receipt.isEmpty else {
                problems.append("line \(number): receipt is missing")
                continue
            }
            let environmentName = fields["environment"] ?? "Production"
            guard let environment = AppStoreEnvironment(rawValue: environmentName) else {
                problems.append("line \(number): environment must be Production or Sandbox, not '\(environmentName)'")
                continue
            }
            let app = fields["app"].map { apps.app(named: $0)?.name } ?? apps.app(bundleID: fields["bundle_id"])?.name
            guard let app else {
                problems.append("line \(number): " + (fields["app"].map { "no app is named '\($0)'" }
                    ?? fields["bundle_id"].map { "the bundle id \($0) is no app's" } ?? "name its app (app or bundle_id)")
                    + "; the apps are \(apps.names.joined(separator: ", "))")
                continue
            }
            subscriptions.append(NewSubscription(
                app: app, originalTransactionID: id, environment: environment,
                receipt: ReceiptData(base64: receipt), accountID: fields["account_id"]))
        }
        return (subscriptions, problems)
    }

    /// Adds `subscriptions` to the ledger 10,000 at a time; `progress` hears after each batch how
    /// many are done. Returns how many were added, and how many were already present.
    public static func add(
        _ subscriptions: [NewSubscription], to ledger: Ledger, progress: (_ done: Int) -> Void
    ) throws -> (inserted: Int, alreadyPresent: Int) {
        var inserted = 0
        var present = 0
        for start in stride(from: 0, to: subscriptions.count, by: 10_000) {
            let batch = Array(subscriptions[start..<min(start + 10_000, subscriptions.count)])
            let result = try ledger.addSubscriptions(batch)
            inserted += result.inserted
            present += result.alreadyPresent
            progress(start + batch.count)
        }
        return (inserted, present)
    }
}
