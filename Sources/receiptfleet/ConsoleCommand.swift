import ArgumentParser
import Console
import FleetConfiguration
import FleetFlags
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
    @OptionGroup var console: ConsoleOptions

    func run() async throws {
        let (logger, resolved, fleet) = try options.setUp(console)
        let server = try ConsoleServer.serving(resolved, fleet: fleet, logger: logger)
        try await ProcessRoot.run(.console(server), settings: fleet, logger: logger)
    }
}

/// `console`'s own flags; like every setting they also come from RECEIPTFLEET_<NAME> or the file.
struct ConsoleOptions: SettingFlags {
    static let commands = Commands.console

    @OptionGroup var listen: ListenOptions
}
