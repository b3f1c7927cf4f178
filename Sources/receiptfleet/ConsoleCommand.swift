import ArgumentParser
import Console
import Fleet
import Foundation
import Observability
import ProcessRoot

/// `receiptfleet console`
struct ConsoleCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "console",
        abstract: "Serve the ops console alone: queue, Apple, dead letters, subscriptions and webhooks on one web page.",
        discussion: """
            The same console `receiptfleet serve` mounts under /console, for operators who run no API. \
            Open http://ADDRESS/console and log in with an operator token. Operator tokens are not API \
            tokens: they come from RECEIPTFLEET_CONSOLE_TOKENS or the file named by console-tokens-file \
            (NAME:TOKEN entries; the name is logged with every action), never from a flag. Sessions \
            and the charts' samples live in Redis, so every replica shows the same page. Behind a TLS \
            proxy, set console-secure-cookies so the session cookie is sent over TLS only.

            Examples:
              RECEIPTFLEET_CONSOLE_TOKENS=alice:$(openssl rand -hex 32) receiptfleet console
              receiptfleet console --address 0.0.0.0:8081 --config /etc/receiptfleet.json
            """)

    @OptionGroup var options: FleetOptions

    @Option(help: "HOST:PORT to listen on (port 0 picks a free one). Default 127.0.0.1:8081.")
    var address: String?

    func run() async throws {
        let logger = setUpLogging(level: options.logLevel)
        let resolved = try ResolvedConfiguration(options: options, commandFlags: ["address": address])
        let fleet = try resolved.settings()
        guard let settings = try resolved.consoleSettings() else {
            throw ConfigurationError(key: "console-tokens", source: "default", reason:
                "the console needs operator tokens: set RECEIPTFLEET_CONSOLE_TOKENS=NAME:TOKEN[,NAME:TOKEN…] or name a file with console-tokens-file")
        }
        let (host, port) = try resolved.listenAddress(default: "127.0.0.1:8081")
        let operators = settings.operators.names.joined(separator: ",")
        let server = try ConsoleServer(settings: settings, fleet: fleet, host: host, port: port, logger: logger) { port in
            logger.info("console listening", metadata: ["url": "http://\(host):\(port)/console", "operators": "\(operators)"])
        }
        try await ProcessRoot.run(
            ProcessRoot.services(for: .console(server), settings: fleet, metrics: ProcessMetrics(), logger: logger), logger: logger)
        logger.info("console stopped")
    }
}

extension ResolvedConfiguration {
    /// The console's settings; nil when no operator token is configured (serve then mounts no console).
    func consoleSettings() throws -> ConsoleSettings? {
        guard let operators = try namedTokens("console-tokens", kind: "console tokens") else { return nil }
        return ConsoleSettings(operators: operators, secureCookies: try boolean("console-secure-cookies", default: false))
    }

    /// The `address` setting as host and port.
    func listenAddress(default fallback: String) throws -> (host: String, port: Int) {
        let address = string("address", default: fallback)
        guard let colon = address.lastIndex(of: ":"), let port = Int(address[address.index(after: colon)...]),
              (0...65_535).contains(port), colon > address.startIndex
        else {
            throw ConfigurationError(key: "address", source: value("address")?.source ?? "default",
                                     reason: "'\(address)' is not HOST:PORT, e.g. \(fallback)")
        }
        return (String(address[..<colon]).trimmingCharacters(in: CharacterSet(charactersIn: "[]")), port)
    }
}
