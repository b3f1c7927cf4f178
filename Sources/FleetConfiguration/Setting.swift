import Foundation
import Redaction

/// One setting, declared once in `SettingsRegistry`: its key, what it accepts, its default, its
/// help, whether it is a flag or a secret, and the commands that read it. Everything else is made
/// from the declaration: the `@Option`s' names and help (`@Option(Settings.rateLimit)`), the
/// lookup through the layers (`ResolvedConfiguration`), `config check`'s row, and the table in
/// docs/operations.md (`config reference`).
///
/// Why not swift-configuration (apple/swift-configuration, which Hummingbird offers behind its
/// `ConfigurationSupport` trait, switched off in Package.swift): it would replace only the
/// layering, some forty lines here, and bend what the fleet promises. Its JSON provider is typed (a
/// file's `"rate-limit": "50"` fails to read as a number, and `"concurrency": 8` as a string), its
/// environment provider takes an empty variable as a value where the fleet takes it as unset, its
/// file provider is async where most commands are not, and errors name its providers rather than
/// "flag --rate-limit" or "environment RECEIPTFLEET_RATE_LIMIT". The registry, the validation and
/// its wording, the flags, the docs and `config check` would all still be ours. Worth another look
/// if the fleet wants reloading.
public struct Setting<Value: Sendable>: Sendable {
    public let key: String
    public let rule: Rule<Value>
    /// The value when none is given; it may depend on other settings (rate-burst on rate-limit).
    public let fallback: @Sendable (ResolvedConfiguration) throws -> Value
    /// The default, as the docs and `--help` say it.
    public let defaultText: String
    public let exposure: Exposure
    public let commands: Commands
    /// One sentence: the flag's help, and the start of the docs' meaning.
    public let help: String
    /// More for the docs.
    public let details: String?
    /// The value as `config check` shows it (masked for secrets).
    public let show: @Sendable (Value) -> String
    /// Also read from the file named by KEY-file (secrets: RECEIPTFLEET_SHARED_SECRET or a file).
    public let orFile: Bool
    /// Read from the configuration file too (all but `config`, which names it).
    public let inFile: Bool

    private init(
        key: String, rule: Rule<Value>, fallback: @escaping @Sendable (ResolvedConfiguration) throws -> Value,
        defaultText: String, exposure: Exposure, commands: Commands, help: String, details: String?,
        show: (@Sendable (Value) -> String)?, orFile: Bool, inFile: Bool
    ) {
        self.key = key
        self.rule = rule
        self.fallback = fallback
        self.defaultText = defaultText
        self.exposure = exposure
        self.commands = commands
        self.help = help
        self.details = details
        let masked: @Sendable (Value) -> String = { _ in "set (masked)" }
        self.show = show ?? (exposure == .secret ? masked : rule.show)
        self.orFile = orFile
        self.inFile = inFile
    }

    /// A setting with a default value.
    public init(
        _ key: String, _ rule: Rule<Value>, default value: Value, _ exposure: Exposure = .variable, for commands: Commands = .fleet,
        help: String, details: String? = nil, show: (@Sendable (Value) -> String)? = nil
    ) {
        self.init(
            key: key, rule: rule, fallback: { _ in value }, defaultText: rule.written(value), exposure: exposure, commands: commands,
            help: help, details: details, show: show, orFile: false, inFile: true)
    }

    /// A setting whose default is worked out from other settings (or from the command).
    public init(
        _ key: String, _ rule: Rule<Value>, derived defaultText: String, _ exposure: Exposure = .variable, for commands: Commands = .fleet,
        help: String, details: String? = nil, show: (@Sendable (Value) -> String)? = nil,
        _ fallback: @escaping @Sendable (ResolvedConfiguration) throws -> Value
    ) {
        self.init(
            key: key, rule: rule, fallback: fallback, defaultText: defaultText, exposure: exposure, commands: commands,
            help: help, details: details, show: show, orFile: false, inFile: true)
    }

    /// A setting that may be left unset; `unset` says what that means (the docs' default, `config check`'s value).
    public init<Wrapped: Sendable>(
        _ key: String, _ rule: Rule<Wrapped>, unset: String, _ exposure: Exposure = .variable, for commands: Commands = .fleet,
        orFile: Bool = false, inFile: Bool = true, help: String, details: String? = nil, show: (@Sendable (Wrapped) -> String)? = nil
    ) where Value == Wrapped? {
        let masked: @Sendable (Wrapped) -> String = { _ in "set (masked)" }
        let shown = show ?? (exposure == .secret ? masked : rule.show)
        self.init(
            key: key, rule: Rule<Value>(rule.text, parse: { try rule.parse($0, $1) }).with(completion: rule.completion),
            fallback: { _ in nil }, defaultText: unset,
            exposure: exposure, commands: commands, help: help, details: details, show: { $0.map(shown) ?? unset },
            orFile: orFile, inFile: inFile)
    }
}

/// What a shell's completion offers for a setting's flag.
public enum Completion: Sendable {
    /// One of these words.
    case values([String])
    /// A file's path.
    case file
}

/// Where a setting may be given besides RECEIPTFLEET_<NAME> and the configuration file.
public enum Exposure: Sendable {
    /// Also a flag, --KEY.
    case flag
    /// The environment and the file only.
    case variable
    /// The environment and the file only, never a flag (flags show in `ps`), and masked.
    case secret
}

/// The commands that read a setting. `fleet` is every command that takes the fleet's settings
/// (`FleetOptions`); `serve` and `console` add their own (`APIOptions`, `ConsoleOptions`).
public struct Commands: OptionSet, Sendable, Hashable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }
    public static let fleet = Commands(rawValue: 1)
    public static let serve = Commands(rawValue: 2)
    public static let console = Commands(rawValue: 4)

    public var names: [String] {
        [(Commands.fleet, "fleet"), (.serve, "serve"), (.console, "console")].filter { contains($0.0) }.map(\.1)
    }
}

/// Why a value is refused; the resolver makes it "configuration 'KEY' (from SOURCE): REASON".
public struct InvalidValue: Error {
    public let reason: String
    public init(_ reason: String) { self.reason = reason }
}

/// What a setting accepts, how its text becomes a value, and how a value is shown.
public struct Rule<Value: Sendable>: Sendable {
    /// What it accepts, for the docs (and the refusal, for the simple rules).
    public let text: String
    /// The value of the text, or an `InvalidValue`; the configuration is there for rules that depend on
    /// another setting (webhook-endpoint-concurrency on webhook-threads).
    public let parse: @Sendable (String, ResolvedConfiguration) throws -> Value
    /// As `config check` shows it.
    public var show: @Sendable (Value) -> String = { "\($0)" }
    /// As an operator writes it (the docs' default).
    public var written: @Sendable (Value) -> String = { plain("\($0)") }
    /// What a shell's completion offers for its flag: the values it takes, files, or nothing.
    public var completion: Completion?

    public init(_ text: String, parse: @escaping @Sendable (String, ResolvedConfiguration) throws -> Value) {
        self.text = text
        self.parse = parse
    }

    /// A text that `read` takes and `valid` keeps; otherwise "'TEXT' is not RULE".
    public init(_ text: String, read: @escaping @Sendable (String) -> Value?, valid: @escaping @Sendable (Value) -> Bool = { _ in true }) {
        self.init(text) { raw, _ in
            guard let value = read(raw), valid(value) else { throw InvalidValue("'\(raw)' is not \(text)") }
            return value
        }
    }

    /// The same rule, its flag completed from `values` (or `kind`) by the shells.
    public func offering(_ values: [String]) -> Rule { completing(.values(values)) }

    public func completing(_ kind: Completion) -> Rule { with(completion: kind) }

    public func with(completion: Completion?) -> Rule {
        var rule = self
        rule.completion = completion
        return rule
    }

    /// The value `convert` makes of the text; its error, described, is the reason.
    public static func converting(_ text: String, _ convert: @escaping @Sendable (String, ResolvedConfiguration) throws -> Value) -> Rule {
        Rule(text) { raw, configuration in
            do {
                return try convert(raw, configuration)
            } catch where error is ConfigurationError || error is InvalidValue {
                throw error
            } catch {
                throw InvalidValue("\(error)")
            }
        }
    }

    public func showing(_ show: @escaping @Sendable (Value) -> String) -> Rule {
        var rule = self
        rule.show = show
        return rule
    }

    public func writing(_ written: @escaping @Sendable (Value) -> String) -> Rule {
        var rule = self
        rule.written = written
        return rule
    }
}

/// "50.0" as an operator writes it: "50".
public func plain(_ number: String) -> String { number.hasSuffix(".0") ? String(number.dropLast(2)) : number }

/// A setting, whatever its type: for the listings (`config check`, `config reference`) and the flags.
public protocol AnySetting: Sendable {
    var key: String { get }
    var defaultText: String { get }
    var exposure: Exposure { get }
    var commands: Commands { get }
    var help: String { get }
    var details: String? { get }
    var orFile: Bool { get }
    var inFile: Bool { get }
    var accepts: String { get }
    /// What a shell's completion offers for its flag.
    var completion: Completion? { get }
    /// Its value in `configuration`, as `config check` shows it.
    func shown(in configuration: ResolvedConfiguration) throws -> String
}

extension Setting: AnySetting {
    public var accepts: String { rule.text }
    public var completion: Completion? { rule.completion }
    public func shown(in configuration: ResolvedConfiguration) throws -> String { show(try configuration[self]) }
}

extension AnySetting {
    public var isFlag: Bool { exposure == .flag }
    public var variable: String { Settings.variable(ofKey: key) }
    /// The flag's help: the sentence and the default.
    public var flagHelp: String { "\(help) (default: \(defaultText))" }

    /// The setting KEY-file of a secret read from a file too, as a setting of its own.
    public var fileSetting: Setting<String?>? { orFile ? .file(of: self) : nil }
}

extension Setting where Value == String? {
    static func file(of setting: some AnySetting) -> Setting {
        Setting(
            setting.key + "-file", Rule<String>.path, unset: "not set", for: setting.commands,
            help: "A file holding \(setting.key) instead, read at start (the way to keep it out of the environment).")
    }
}

// The rules most settings share.
extension Rule where Value: LosslessStringConvertible {
    public static func number(_ text: String, _ valid: @escaping @Sendable (Value) -> Bool) -> Rule {
        Rule(text, read: { Value($0) }, valid: valid)
    }
}

extension Rule where Value == Int {
    public static func whole(_ range: ClosedRange<Int>) -> Rule {
        .number("a whole number from \(range.lowerBound) to \(range.upperBound)") { range.contains($0) }
    }

    public static func whole(atLeast minimum: Int) -> Rule { .number("a whole number ≥ \(minimum)") { $0 >= minimum } }
}

extension Rule where Value == Double {
    public static var rate: Rule {
        Rule.number("a rate between 0 and 100000 per second") { $0 > 0 && $0 <= 100_000 }.showing { "\($0)/s" }
    }
}

extension Rule where Value == Duration {
    /// A whole number of seconds that `valid` keeps.
    public static func wholeSeconds(_ text: String, _ valid: @escaping @Sendable (Int) -> Bool) -> Rule {
        Rule(text, read: { Int($0).flatMap { valid($0) ? .seconds($0) : nil } }).writing { "\($0.components.seconds)" }
    }

    /// A number of seconds that `valid` keeps, to the millisecond.
    public static func seconds(_ text: String, _ valid: @escaping @Sendable (Double) -> Bool) -> Rule {
        Rule(text, read: { Double($0).flatMap { valid($0) ? .milliseconds(Int64(1000 * $0)) : nil } })
            .writing { plain("\(Double($0.components.seconds) + Double($0.components.attoseconds) / 1e18)") }
    }
}

extension Rule where Value == Bool {
    /// true, 1 or yes; false, 0 or no (a JSON file's true reads as 1).
    public static var boolean: Rule {
        Rule("true or false", read: {
            switch $0.lowercased() {
            case "true", "1", "yes": true
            case "false", "0", "no": false
            default: nil
            }
        })
    }
}

extension Rule where Value == String {
    public static var text: Rule { Rule("any text") { text, _ in text } }
    /// The text, when `check` takes it.
    public static func checked(_ text: String, by check: @escaping @Sendable (String) throws -> Void) -> Rule {
        .converting(text) { value, _ in
            try check(value)
            return value
        }
    }
    public static var path: Rule { Rule("a file's path") { path, _ in path }.completing(.file) }
    /// Shown with its password masked. Refused with white space around it, which the clients refuse
    /// (a stray space or newline from a copied secret).
    public static var connection: Rule {
        Rule("a URL or conninfo") { text, _ in
            guard text.trimmingCharacters(in: .whitespacesAndNewlines) == text else {
                throw InvalidValue("it begins or ends with white space (a space or a newline), which the client refuses: remove it")
            }
            return text
        }
        .showing { Redact.connectionString($0) }
    }
    public static var url: Rule { Rule("a URL") { text, _ in text }.showing { Redact.url($0) } }
    /// Read now, so that a wrong path fails at start.
    public static var readableFile: Rule {
        Rule("a readable file's path") { path, _ in
            guard FileManager.default.isReadableFile(atPath: path) else { throw InvalidValue("cannot read \(path)") }
            return path
        }
        .completing(.file)
    }
}

extension Rule where Value == [String] {
    /// Comma-separated, blanks dropped.
    public static var list: Rule {
        Rule("a comma-separated list") { text, _ in
            text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        }
        .showing { $0.isEmpty ? "none" : $0.joined(separator: ",") }.writing { $0.isEmpty ? "none" : $0.joined(separator: ",") }
    }
}
