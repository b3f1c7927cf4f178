import AppStore
import ArgumentParser
import FleetFlags
import Foundation

/// `receiptfleet inspect`: what does Apple say about this customer, on either backend?
struct Inspect: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show the subscription state and events, and the one-time purchases, Apple's answer implies (verifyReceipt or the Server API).",
        discussion: """
            Reads a verifyReceipt response body (as Apple sent it) and prints, for each subscription in it, \
            the state the fleet would store and the events it would emit. With --state, the events are the \
            changes since that stored state (a file as printed by this command, or the `state` column of the \
            subscriptions table); without it, the analysis is a baseline and emits none. One-time purchases \
            (non-consumables, non-renewing subscriptions: entries without an expiry, or of a product named with \
            --non-renewing-product) are listed apart, owned or refunded. Receipts in the output are redacted.

            It reads the App Store Server API's answers too: a JSON object holding Apple's bodies as sent, \
            {"statuses": <Get All Subscription Statuses>, "history": [<Get Transaction History page>, ...]} \
            (the history may be left out). Every signed payload must verify against Apple's root (or the one \
            --root names: a DER or PEM file) and name the app the statuses answer names (or --bundle-id), as \
            the fleet requires; the same state and events are printed, so support judges both backends alike.

            Exits 0 for any response that can be read, including error statuses (reported as such), and 1 \
            for a body that cannot be read or a signed payload that does not verify.

            Examples:
              receiptfleet inspect response.json
              curl -s … | receiptfleet inspect - --format table
              receiptfleet inspect response.json --original-transaction-id 1000000218147500 --now 2026-11-23T00:00:00Z
              receiptfleet inspect today.json --state yesterday-state.json
              receiptfleet inspect server-api-answers.json --format table
              receiptfleet inspect server-api-answers.json --root simulator-root.pem --bundle-id com.example.app
            """)

    enum Format: String, ExpressibleByArgument, CaseIterable {
        case json, table
    }

    @Argument(help: "The response body: a file, or - for standard input.")
    var file: String

    @Option(name: .customLong("original-transaction-id"), help: "Analyse only this subscription.")
    var originalTransactionID: String?

    @Option(help: "The time to judge the state at, ISO 8601 such as 2026-11-23T09:00:00Z (default: now).")
    var now: Instant?

    @Option(help: "A stored subscription state (JSON) to compare with.")
    var state: String?

    @Option(name: .customLong("non-renewing-product"), help: "A product sold as a non-renewing subscription (repeatable).")
    var nonRenewingProductIDs: [String] = []

    @Option(help: "Output format: json or table.")
    var format: Format = .json

    @Option(help: "Server API answers: the root certificate (DER or PEM) their signatures must chain to (default: Apple Root CA - G3).")
    var root: String?

    @Option(name: .customLong("bundle-id"), help: "Server API answers: the app every signed payload must name (default: the statuses answer's bundleId).")
    var bundleID: String?

    func run() async throws {
        let body = try read(file)
        let moment = now?.date ?? Date()
        let stored = try state.map { path in
            try JSONDecoder().decode(SubscriptionState.self, from: Data(read(path)))
        }
        // An unreadable body or untrusted answers throw an error, which ArgumentParser prints before exiting 1.
        let response = try await ServerAPICapture.response(in: body, rootFile: root, bundleID: bundleID)
        let inspection = try Inspection(
            response: response, now: moment, stored: stored, originalTransactionID: originalTransactionID,
            nonRenewingProductIDs: Set(nonRenewingProductIDs))
        switch format {
        case .json: print(try inspection.json())
        case .table: print(inspection.table)
        }
    }

    private func read(_ path: String) throws -> [UInt8] {
        if path == "-" { return Array(FileHandle.standardInput.readDataToEndOfFile()) }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ValidationError("Cannot read \(path): check that the file exists and is readable.")
        }
        return Array(data)
    }
}
