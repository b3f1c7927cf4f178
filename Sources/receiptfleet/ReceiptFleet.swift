import ArgumentParser
import BuildInfo
import HTTPClient

/// The `receiptfleet` command line.
@main
struct ReceiptFleet: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "receiptfleet",
        abstract: "Re-verifies App Store subscriptions at fleet scale.",
        version: BuildInfo.description,
        subcommands: [
            Worker.self, Relay.self, Serve.self, ConsoleCommand.self, Schedule.self, Status.self, Verify.self, Dead.self, Waiting.self, Subscriptions.self, Webhooks.self, Notifications.self, Config.self, Pause.self, Resume.self, Audit.self, Prune.self, Migrate.self, Inspect.self,
            SimulateAppStore.self, DemoCommand.self,
        ])

    /// As ArgumentParser's own, after the C libraries are prepared (`CLibraries.prepare`).
    static func main() async {
        CLibraries.prepare()
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? AsyncParsableCommand { try await asyncCommand.run() } else { try command.run() }
        } catch {
            exit(withError: error)
        }
    }
}
