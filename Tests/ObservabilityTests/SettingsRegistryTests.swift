import Foundation
import PostgresClient
import TestSupport
import Testing

/// The settings registry: the commands' flags, `config check` and docs/operations.md's table all
/// come from it, and every command reads its settings the same way.
@Suite struct SettingsRegistryTests {
    /// The registry as `config reference --json` prints it.
    private struct Entry {
        let key: String
        let flag: Bool
        let secret: Bool
        let commands: Set<String>
        /// Read from the configuration file too.
        let inFile: Bool
        let variable: String
        let defaultText: String
    }

    private func registry() async throws -> [Entry] {
        let printed = try await runFleetCommand(["config", "reference", "--json"], environment: [:])
        #expect(printed.status == 0, "\(printed.output)")
        let objects = try #require(try JSONSerialization.jsonObject(with: Data(printed.output.utf8)) as? [[String: Any]], "\(printed.output)")
        return try objects.map { object in
            Entry(
                key: try #require(object["key"] as? String), flag: try #require(object["flag"] as? Bool),
                secret: try #require(object["secret"] as? Bool), commands: Set(try #require(object["commands"] as? [String])),
                inFile: try #require(object["file"] as? Bool), variable: try #require(object["environment"] as? String),
                defaultText: try #require(object["default"] as? String))
        }
    }

    @Test func docsOperationsTableIsTheRegistrys() async throws {
        let reference = try await runFleetCommand(["config", "reference"], environment: [:])
        #expect(reference.status == 0, "\(reference.output)")
        let expected = reference.output.trimmingCharacters(in: .whitespacesAndNewlines)
        let path = TestServers.repositoryRoot + "/docs/operations.md"
        let docs = try String(contentsOfFile: path, encoding: .utf8)
        let begin = "<!-- settings: begin -->", end = "<!-- settings: end -->"
        let start = try #require(docs.range(of: begin), "docs/operations.md has no \(begin) line")
        let stop = try #require(docs.range(of: end, range: start.upperBound..<docs.endIndex), "docs/operations.md has no \(end) line")
        let table = docs[start.upperBound..<stop.lowerBound].trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(table == expected, """
            docs/operations.md's settings table is not the registry's (Sources/FleetConfiguration/SettingsRegistry.swift). \
            Put this between its \(begin) and \(end) lines (`receiptfleet config reference` prints it):

            \(expected)
            """)
    }

    /// Both ways: every flag setting is a flag of every command that reads it, and no command has a
    /// flag for a setting that is none (a secret above all: flags show in `ps`).
    @Test func theCommandsFlagsAreTheRegistrysFlagSettings() async throws {
        let entries = try await registry()
        let dump = try await runFleetCommand(["--experimental-dump-help"], environment: [:])
        #expect(dump.status == 0)
        let tool = try #require(try JSONSerialization.jsonObject(with: Data(dump.output.utf8)) as? [String: Any], "\(dump.output)")
        var commands: [String: Set<String>] = [:]
        func walk(_ command: [String: Any], path: [String]) {
            let path = path + [command["commandName"] as? String ?? ""]
            let subcommands = command["subcommands"] as? [[String: Any]] ?? []
            if subcommands.isEmpty {
                let arguments = command["arguments"] as? [[String: Any]] ?? []
                commands[path.dropFirst().joined(separator: " ")] = Set(arguments.flatMap { argument in
                    (argument["names"] as? [[String: String]] ?? []).filter { $0["kind"] == "long" }.compactMap { $0["name"] }
                })
            }
            for subcommand in subcommands { walk(subcommand, path: path) }
        }
        walk(try #require(tool["command"] as? [String: Any]), path: [])
        #expect(commands["worker"] != nil && commands["config check"] != nil, "\(commands.keys.sorted())")

        let keys = Set(entries.map(\.key))
        func flags(of group: String) -> Set<String> { Set(entries.filter { $0.flag && $0.commands.contains(group) }.map(\.key)) }
        // Commands that take no fleet settings, and options of a command's own that share a setting's name.
        let settingless: Set<String> = ["inspect", "config reference", "help"]
        let ownOptions = ["demo": Set(["backend"])]  // which of Apple's services the demo's simulator plays
        for (command, names) in commands.sorted(by: { $0.key < $1.key }) {
            // The simulator plays Apple: its options (its own --shared-secret) are not the fleet's.
            guard !settingless.contains(command), !command.hasPrefix("simulate-appstore") else { continue }
            #expect(names.isDisjoint(with: entries.filter(\.secret).map(\.key)), "\(command) has a secret as a flag")
            var expected = flags(of: "fleet")
            if ["serve", "config check"].contains(command) { expected.formUnion(flags(of: "serve")) }
            if command == "console" { expected.formUnion(flags(of: "console")) }
            let declared = names.intersection(keys).subtracting(ownOptions[command] ?? [])
            #expect(declared.subtracting(expected).isEmpty, "\(command) has flags the registry does not: \(declared.subtracting(expected).sorted())")
            #expect(expected.subtracting(declared).isEmpty, "\(command) lacks the registry's flags \(expected.subtracting(declared).sorted())")
        }
        let everyFlag = Set(entries.filter(\.flag).map(\.key))
        #expect(everyFlag.subtracting(commands.values.reduce(Set()) { $0.union($1) }).isEmpty, "flag settings no command has")
    }

    @Test func configCheckShowsEverySettingAndWhereItCameFrom() async throws {
        let entries = try await registry()
        let check = try await runFleetCommand(
            ["config", "check", "--lanes", "8"],
            environment: ["RECEIPTFLEET_API_TOKENS": "backend:api-secret-token", "RECEIPTFLEET_RETRY_CAP": "600", "RECEIPTFLEET_METRICS_ADDRESS": ""])
        #expect(check.status == 0, "\(check.output)")
        let lines = check.output.split(separator: "\n").map(String.init)
        for entry in entries {
            #expect(lines.contains { $0.hasPrefix(entry.key.padding(toLength: 30, withPad: " ", startingAt: 0)) }, "no row for \(entry.key)")
        }
        func row(_ key: String) -> String { key.padding(toLength: 30, withPad: " ", startingAt: 0) }
        #expect(check.output.contains(row("lanes") + "8   (flag --lanes)"))
        #expect(check.output.contains(row("retry-cap") + "600.0 seconds   (environment RECEIPTFLEET_RETRY_CAP)"))
        #expect(check.output.contains(row("api-tokens") + "1 set (masked): backend   (environment RECEIPTFLEET_API_TOKENS)"))
        #expect(check.output.contains(row("address") + "127.0.0.1:8080   (default)"))
        #expect(!check.output.contains("api-secret-token"))

        // A secret is never a flag, and one read from a file is named by its -file setting.
        let flag = try await runFleetCommand(["config", "check", "--api-tokens", "backend:x"], environment: [:])
        #expect(flag.status != 0 && flag.output.contains("Unknown option '--api-tokens'"), "\(flag.output)")
        let unreadable = try await runFleetCommand(["config", "check"], environment: ["RECEIPTFLEET_CONSOLE_TOKENS_FILE": "/nonexistent/tokens"])
        #expect(unreadable.status != 0)
        #expect(unreadable.output.contains(
            "configuration 'console-tokens-file' (from environment RECEIPTFLEET_CONSOLE_TOKENS_FILE): cannot read /nonexistent/tokens"))
    }

    /// Texts every setting accepts, for the settings whose default is prose rather than a value
    /// (unset, or worked out from others); the rest are given their default's text.
    private func samples(in directory: URL) throws -> [String: String] {
        func file(_ name: String, _ text: String) throws -> String {
            let url = directory.appendingPathComponent(name)
            try Data(text.utf8).write(to: url)
            return url.path
        }
        let root = TestServers.repositoryRoot + "/Tests/APIServiceTests/Fixtures/AppleRootCA-G3.der"
        let key = Data(repeating: 7, count: 32).base64EncodedString()
        return [
            "config": try file("config.json", "{}"),
            "relay-postgres-url": "postgresql://relay@localhost/receiptfleet",
            "apple-ca-file": root,
            "shared-secret": "account-secret", "shared-secret-file": try file("secret", "account-secret"),
            "apps-file": try file("apps.json", #"{"photos": {"bundle_ids": ["com.example.photos"]}}"#),
            "apple-bundle-id": "com.example.photos", "apple-app-id": "1460000001", "refund-preference": "decline",
            "server-api-issuer-id": "issuer", "server-api-key-id": "SIMKEY",
            "server-api-key-file": try file("AuthKey_SIMKEY.p8", SimulatedServerAPI.privateKey.pemRepresentation),
            "server-api-rate-limit": "20", "apple-root-certificate": root, "rate-burst": "3", "retention-events-days": "500",
            "address": "127.0.0.1:0", "api-tokens": "backend(read):api-token-0123456789", "api-tokens-file": try file("api", "backend(read):api-token-0123456789"),
            "trusted-proxies": "10.0.0.0/8", "console-tokens": "ops:console-token-0123456789", "console-tokens-file": try file("ops", "ops:console-token-0123456789"),
            "webhook-proxy": "http://egress.internal:3128", "webhook-secret-key": key, "webhook-secret-previous-keys": key,
            "non-renewing-products": "com.example.pass",
        ]
    }

    /// Every setting reaches the commands through each way it may be given: a flag setting through
    /// its flag, every setting through its environment variable, every setting of the file through
    /// the configuration file. `config check` names where each value came from, so a flag bound to
    /// the wrong property, a variable misspelt or a key the file never reaches fails here, not in
    /// production.
    @Test func everySettingArrivesThroughEachOfItsChannels() async throws {
        let entries = try await registry()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(uniqueName("channels"))
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let samples = try samples(in: directory)
        func text(_ entry: Entry) -> String { samples[entry.key] ?? entry.defaultText }
        // Nothing from the environment this test runs in (scripts/services sets the servers' URLs).
        let blank = Dictionary(uniqueKeysWithValues: entries.map { ($0.variable, "") })
        func row(_ key: String, _ source: String, in output: String) -> Bool {
            output.split(separator: "\n").contains { $0.hasPrefix(key.padding(toLength: 30, withPad: " ", startingAt: 0)) && $0.hasSuffix("(\(source))") }
        }

        let flags = entries.filter(\.flag)
        // A switch (allow-private-webhooks) is given bare, to mean true.
        let arguments = flags.flatMap { $0.defaultText == "false" ? ["--\($0.key)"] : ["--\($0.key)", text($0)] }
        let byFlag = try await runFleetCommand(["config", "check"] + arguments, environment: blank)
        #expect(byFlag.status == 0, "\(byFlag.output)")
        for entry in flags { #expect(row(entry.key, "flag --\(entry.key)", in: byFlag.output), "\(entry.key) did not arrive by its flag") }

        let variables = blank.merging(entries.map { ($0.variable, text($0)) }) { $1 }
        let byVariable = try await runFleetCommand(["config", "check"], environment: variables)
        #expect(byVariable.status == 0, "\(byVariable.output)")
        for entry in entries {
            #expect(row(entry.key, "environment \(entry.variable)", in: byVariable.output), "\(entry.key) did not arrive by \(entry.variable)")
        }

        let inFile = entries.filter(\.inFile)
        let config = directory.appendingPathComponent("every-setting.json")
        try JSONSerialization.data(withJSONObject: Dictionary(uniqueKeysWithValues: inFile.map { ($0.key, text($0)) })).write(to: config)
        let byFile = try await runFleetCommand(["config", "check", "--config", config.path], environment: blank)
        #expect(byFile.status == 0, "\(byFile.output)")
        for entry in inFile { #expect(row(entry.key, "file", in: byFile.output), "\(entry.key) did not arrive from the file") }
    }

    /// A valid configuration that leaves out what part of the fleet needs says what and why, instead
    /// of reading as complete; one that leaves nothing out is simply valid.
    @Test func configCheckNamesWhatAValidConfigurationLeavesOut() async throws {
        let blank = Dictionary(uniqueKeysWithValues: try await registry().map { ($0.variable, "") })
        let bare = try await runFleetCommand(["config", "check"], environment: blank)
        #expect(bare.status == 0, "\(bare.output)")
        for missing in ["The configuration is valid, but it leaves out:", "a shared secret for default: Apple answers 21004",
                        "API tokens: `serve` refuses to start", "console tokens: there is no ops console"] {
            #expect(bare.output.contains(missing), "\(missing): \(bare.output)")
        }
        let whole = blank.merging([
            "RECEIPTFLEET_SHARED_SECRET": "a-shared-secret-for-the-test", "RECEIPTFLEET_API_TOKENS": "backend:" + String(repeating: "b7", count: 16),
            "RECEIPTFLEET_CONSOLE_TOKENS": "ops:" + String(repeating: "c9", count: 16),
        ]) { $1 }
        let complete = try await runFleetCommand(["config", "check"], environment: whole)
        #expect(complete.status == 0 && complete.output.contains("The configuration is valid.\n"), "\(complete.output)")
        #expect(!complete.output.contains("leaves out"), "\(complete.output)")
    }

    /// A server URL with white space around it (a copied secret's stray space or newline) is refused
    /// before any client sees it, and the refusal never prints the password.
    @Test func aServerURLWithWhiteSpaceIsRefusedAndItsPasswordNeverShown() async throws {
        for url in [" postgresql://fleet:S9lead@db/x", "\npostgresql://fleet:S9lead@db/x", "postgresql://fleet:S9lead@db/x "] {
            let check = try await runFleetCommand(["config", "check"], environment: ["RECEIPTFLEET_POSTGRES_URL": url])
            #expect(check.status != 0, "\(check.output)")
            #expect(check.output.contains("configuration 'postgres-url' (from environment RECEIPTFLEET_POSTGRES_URL): it begins or ends with white space"),
                    "\(check.output)")
            #expect(!check.output.contains("S9lead"), "\(check.output)")
            #expect(!check.output.contains("The configuration is valid."))
        }
    }

    /// serve's settings are checked whether or not API tokens are set, from any layer.
    @Test func aServeSettingIsCheckedFromTheFileToo() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent(uniqueName("serve-config") + ".json")
        try Data(#"{"client-rate-limit": 0, "lanes": 2}"#.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let bad = try await runFleetCommand(["config", "check", "--config", file.path], environment: [:])
        #expect(bad.status != 0)
        #expect(bad.output.contains("configuration 'client-rate-limit' (from file): '0' is not a rate between 0 and 100000 per second"), "\(bad.output)")
    }

    @Test func theLogLevelComesFromTheEnvironmentAndIsChecked() async throws {
        let shown = try await runFleetCommand(["config", "check"], environment: ["RECEIPTFLEET_LOG_LEVEL": "debug"])
        #expect(shown.output.contains("log-level".padding(toLength: 30, withPad: " ", startingAt: 0) + "debug   (environment RECEIPTFLEET_LOG_LEVEL)"))
        let wrong = try await runFleetCommand(["schedule", "--dry-run"], environment: ["RECEIPTFLEET_LOG_LEVEL": "verbose"])
        #expect(wrong.status != 0)
        #expect(wrong.output.contains(
            "configuration 'log-level' (from environment RECEIPTFLEET_LOG_LEVEL): 'verbose' is not trace, debug, info, notice, warning, error or critical"),
            "\(wrong.output)")
    }

    /// `migrate` reads postgres-url as every command does: here from the configuration file.
    @Test func migrateReadsTheConfigurationFile() async throws {
        try await TestDatabase.with { database in
            let file = FileManager.default.temporaryDirectory.appendingPathComponent(uniqueName("migrate-config") + ".json")
            try Data(try JSONSerialization.data(withJSONObject: ["postgres-url": database.url])).write(to: file)
            defer { try? FileManager.default.removeItem(at: file) }
            let migrated = try await runFleetCommand(["migrate", "--config", file.path], environment: ["RECEIPTFLEET_POSTGRES_URL": ""])
            #expect(migrated.status == 0, "\(migrated.output)")
            #expect(migrated.output.contains("Applied migrations"), "\(migrated.output)")
            let tables = try await onOwnThread {
                try database.connect().query("SELECT count(*) AS n FROM information_schema.tables WHERE table_name = 'subscriptions'")[0]["n"].int64()
            }
            #expect(tables == 1)
        }
    }
}
