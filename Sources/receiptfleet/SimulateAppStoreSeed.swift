import AppStoreSimulator
import ArgumentParser
import Demo

extension SimulateAppStore {
    /// `receiptfleet simulate-appstore seed`
    struct Seed: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write simulated receipts and the ground truth of each subscription as JSON lines.",
            discussion: """
                Writes one line per subscription (receipts of kind two_groups hold two): receipt_data, \
                original_transaction_id, environment, kind and the state at --at: status (active, in_grace, \
                in_billing_retry, expired, refunded, invalid), product_id, expires_at_ms, auto_renew, \
                auto_renew_product_id, expiration_intent, ownership. Lifecycles are centred on --at, so \
                serve the receipts with the simulator's clock starting there.

                Examples:
                  receiptfleet simulate-appstore seed --count 1000 --seed 7 --out fleet.jsonl
                  receiptfleet simulate-appstore seed --count 14 --seed 1 --at 2026-11-20T09:00:00Z --out kinds.jsonl
                  receiptfleet simulate-appstore seed --count 100 --seed 7 --out fleet.jsonl \\
                    --server-api-key AuthKey_SIM.p8 --server-api-root simulator-root.pem

                --server-api-key writes an In-App Purchase key (P-256, PEM, mode 0600) for the fleet to sign \
                its Server API tokens with and `serve --server-api-key` to check them (an existing file is \
                kept); --server-api-root writes the root certificate the simulator signs its answers with, \
                for the fleet's trusted roots (never trust it outside tests and demos).
                """)

        @Option(help: "How many receipts to create (indices 0..<count; kinds cycle through the indices).")
        var count: Int

        @Option(help: "The seed every lifecycle is drawn from.")
        var seed: UInt64

        @Option(help: "The app whose receipts they are: com.receiptfleet.demo (the default) or com.receiptfleet.journal.")
        var bundleID = Catalog.bundleIDs[0]

        @Option(help: "The time the lifecycles are centred on and the truth is told for: now or ISO 8601.")
        var at: String = "now"

        @Option(help: "The JSON lines file to write.")
        var out: String

        @Option(help: "Write an In-App Purchase key here (.p8) for the simulated Server API, unless one exists.")
        var serverAPIKey: String?

        @Option(help: "Write the simulator's signing root here (PEM), for the fleet's trusted roots in tests and demos.")
        var serverAPIRoot: String?

        func validate() throws {
            guard count > 0 else { throw ValidationError("--count must be at least 1.") }
            guard Catalog.bundleIDs.contains(bundleID) else {
                throw ValidationError("--bundle-id must be one of the simulated apps: \(Catalog.bundleIDs.joined(separator: ", ")).")
            }
        }

        func run() throws {
            let statuses = try SimulatedFleetFile.write(count: count, seed: seed, bundleID: bundleID, atMs: try parseTime(at) / 1000 * 1000, to: out)
            let summary = SubscriptionStatus.allCases.map { "\($0.rawValue)=\(statuses[$0, default: 0])" }
            log("wrote \(statuses.values.reduce(0, +)) subscriptions of \(count) receipts to \(out) (\(summary.joined(separator: " ")))")
            try writeServerAPIFiles()
        }

        /// The simulated Server API's key and root, when asked for.
        private func writeServerAPIFiles() throws {
            if let serverAPIKey, try SimulatedServerAPIFiles.writeKey(to: serverAPIKey) {
                log("wrote an In-App Purchase key for the simulated Server API to \(serverAPIKey)")
            }
            if let serverAPIRoot {
                try SimulatedServerAPIFiles.writeRoot(to: serverAPIRoot)
                log("wrote the simulator's signing root to \(serverAPIRoot) (trust it in tests and demos only)")
            }
        }
    }
}
