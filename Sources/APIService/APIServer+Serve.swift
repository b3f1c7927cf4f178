import AppStore
import FleetConfiguration
import Logging
import Metrics

extension APIServer {
    /// `receiptfleet serve`'s server, from its configuration: it first tells the operator what they
    /// must know (the roots V2 notifications must chain to, what the configuration leaves out, the
    /// console off), and once listening, where.
    public static func serving(
        _ configuration: ResolvedConfiguration, fleet: FleetSettings, logger: Logger, metrics: any MetricsFactory
    ) throws -> APIServer {
        let settings = try APISettings(configuration)
        // An operator's own root (a test CA) is named, so that it is never trusted unnoticed.
        let rootSource = configuration.value("apple-root-certificate").map { "\($0.0) (from \($0.1))" }
            ?? "built in, SHA-256 \(AppleRootCertificate.fingerprint)"
        for root in settings.trustedRoots {
            logger.notice("V2 notifications must chain to this root", metadata: ["root": "\(root.subject)", "source": "\(rootSource)"])
        }
        if fleet.apps.bundleIDs.isEmpty {
            logger.warning("no apple-bundle-id (or apps-file) is configured: V2 notifications are refused with 503 until one is")
        }
        if fleet.sharedSecret == nil {
            logger.warning("no shared secret is configured: Apple refuses registrations and V1 notifications cannot be checked")
        }
        let console = try ConsoleSettings(configuration)
        if console == nil {
            logger.notice("the ops console is off: set RECEIPTFLEET_CONSOLE_TOKENS (or console-tokens-file) to serve it under /console")
        }
        return try APIServer(settings: settings, fleet: fleet, console: console, logger: logger, metrics: metrics) { port in
            if console != nil { logger.info("console listening", metadata: ["url": "http://\(settings.host):\(port)/console"]) }
            logger.info("API listening", metadata: [
                "address": "http://\(settings.host):\(port)", "clients": "\(settings.tokens.names.joined(separator: ","))",
                "notification-environments": "\(settings.notificationEnvironments.map(\.rawValue).sorted().joined(separator: ","))",
            ])
        }
    }
}
