import ArgumentParser
import FleetConfiguration
import FleetFlags
import Operations

/// `receiptfleet config check`, `receiptfleet config reference`
struct Config: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Work with the fleet's configuration.",
        subcommands: [Check.self, Reference.self])

    struct Check: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the resolved configuration, secrets masked, and fail on anything invalid.",
            discussion: """
                Each setting comes from, strongest first: its flag, RECEIPTFLEET_<NAME> in the \
                environment, the JSON file given by --config (or RECEIPTFLEET_CONFIG), the default. \
                An invalid value fails with the key, where it came from, and why. `config reference` \
                lists every setting.

                Examples:
                  receiptfleet config check
                  receiptfleet config check --config /etc/receiptfleet.json --rate-limit 20
                  receiptfleet config check --address 0.0.0.0:8080
                """)

        @OptionGroup var options: FleetOptions
        @OptionGroup var api: APIOptions

        func run() throws {
            let settings = try options.settings()
            let resolved = try ResolvedConfiguration(flags: options, api)
            try ConfigurationReview.rows(settings, resolved) { print($0) }
            for warning in try ConfigurationReview.warnings(settings, resolved) { print("warning: \(warning)") }
            let missing = try ConfigurationReview.leftOut(settings, resolved)
            print(missing.isEmpty ? "The configuration is valid."
                  : "The configuration is valid, but it leaves out:\n" + missing.map { "  - \($0)" }.joined(separator: "\n"))
        }
    }

    struct Reference: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List every setting: its flag, default, what it accepts and what it means.",
            discussion: """
                Each setting is also RECEIPTFLEET_<NAME> in the environment and "name" in the --config file. \
                The Markdown is docs/operations.md's table; a test fails when they differ.
                """)

        @Flag(help: "JSON instead of Markdown: one object per setting.") var json = false

        func run() throws {
            print(json ? try Settings.referenceJSON() : Settings.referenceMarkdown())
        }
    }
}
