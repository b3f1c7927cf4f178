import APIService
import ArgumentParser
import FleetConfiguration
import FleetFlags
import Observability
import ProcessRoot

/// `receiptfleet serve`
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Serve the HTTP API: register receipts, read subscription state, take App Store notifications.",
        discussion: """
            POST /v1/receipts verifies a new purchase with Apple at once (under the fleet's rate limit, \
            pause and halt) and answers its entitlement; GET /v1/subscriptions/{id} and GET \
            /v1/subscriptions?original_transaction_id=…|account_id=… read state; POST \
            /v1/notifications/apple takes App Store Server Notifications V1 and V2 and queues a \
            high-priority verification for the workers. See docs/api.md and docs/openapi.yaml.

            Every endpoint but the notifications needs 'Authorization: Bearer TOKEN'. Tokens come from \
            RECEIPTFLEET_API_TOKENS or the file named by api-tokens-file (never a flag, which `ps` would \
            show): NAME:TOKEN entries separated by commas or lines. V2 notifications are checked against \
            Apple Root CA - G3, built in (its fingerprint checked), and must be for the app's bundle id \
            (--apple-bundle-id, required for V2); --apple-root-certificate names another root (a test CA).

            With operator tokens (RECEIPTFLEET_CONSOLE_TOKENS or console-tokens-file, never API tokens) it \
            also serves the ops console under /console (see `receiptfleet console --help`).

            Its metrics (receiptfleet_api_* and the fleet-wide gauges), /healthz and /readyz are on \
            --metrics-address, as for every long-running command. Stops on SIGTERM/SIGINT after the \
            requests in flight.

            Examples:
              RECEIPTFLEET_API_TOKENS=backend:$(cat /run/secrets/api-token) receiptfleet serve
              receiptfleet serve --address 0.0.0.0:8080 --apple-bundle-id com.example.app
              receiptfleet serve --notification-environments Production,Sandbox --config /etc/receiptfleet.json
            """)

    @OptionGroup var options: FleetOptions
    @OptionGroup var api: APIOptions

    func run() async throws {
        let (logger, resolved, fleet) = try options.setUp(api)
        let metrics = ProcessMetrics()
        let server = try APIServer.serving(resolved, fleet: fleet, logger: logger, metrics: metrics.factory)
        try await ProcessRoot.run(.api(server), settings: fleet, metrics: metrics, logger: logger)
    }
}

/// `serve`'s own flags: where it listens, and the API's; like every setting they also come from
/// RECEIPTFLEET_<NAME> or the file.
struct APIOptions: SettingFlags {
    static let commands = Commands.serve

    @OptionGroup var listen: ListenOptions

    @Option(Settings.notificationEnvironments) var notificationEnvironments: String?
    @Option(Settings.maxBodyBytes) var maxBodyBytes: String?
    @Option(Settings.clientRateLimit) var clientRateLimit: String?
    @Option(Settings.clientRateBurst) var clientRateBurst: String?
    @Option(Settings.lanes) var lanes: String?
}

