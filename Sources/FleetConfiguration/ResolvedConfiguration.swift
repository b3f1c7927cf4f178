import Foundation

/// The layers of configuration, looked up setting by setting (rate-limit: --rate-limit,
/// RECEIPTFLEET_RATE_LIMIT, "rate-limit" in the file, the default).
public struct ResolvedConfiguration: Sendable {
    /// Whose defaults apply where they differ (`address`).
    public let command: Commands
    private let flags: [String: String]
    private let environment: [String: String]
    private var file: [String: String] = [:]

    /// `flags`: the command line's, by key; `command`: whose they are.
    public init(
        flags: [String: String] = [:], command: Commands = .fleet,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws {
        self.environment = environment
        self.flags = flags
        self.command = command
        file = try Self.readFile(try self[Settings.config])
    }

    /// Nothing given: every setting at its default. For tests and tools that start from the
    /// defaults and change a few (`var settings = try FleetSettings(.defaults)`).
    public static var defaults: ResolvedConfiguration {
        get throws { try ResolvedConfiguration(environment: [:]) }
    }

    /// Only these settings given (as the environment would give them), the rest at their defaults.
    public static func given(_ values: SettingValues, command: Commands = .fleet) throws -> ResolvedConfiguration {
        try ResolvedConfiguration(command: command, environment: values.environment)
    }

    /// The value of `key` as given, and where it came from; nil when it is not given.
    public func value(_ key: String) -> (value: String, source: String)? {
        if let value = flags[key] { return (value, "flag --\(key)") }
        let variable = Settings.variable(ofKey: key)
        if let value = environment[variable], !value.isEmpty { return (value, "environment \(variable)") }
        if Settings.named[key]?.inFile != false, let value = file[key] { return (value, "file") }
        return nil
    }

    /// The setting's value, checked: as given, else its default.
    public subscript<Value>(setting: Setting<Value>) -> Value {
        get throws {
            guard let (text, key, source) = try given(setting) else { return try setting.fallback(self) }
            do {
                return try setting.rule.parse(text, self)
            } catch let refusal as InvalidValue {
                throw ConfigurationError(key: key, source: source, reason: refusal.reason)
            }
        }
    }

    public func isSet(_ setting: any AnySetting) -> Bool { source(of: setting) != "default" }

    /// Where the setting came from: "flag --KEY", "environment RECEIPTFLEET_KEY", "file" or "default".
    public func source(of setting: any AnySetting) -> String {
        value(setting.key)?.source ?? (setting.orFile ? value(setting.key + "-file")?.source : nil) ?? "default"
    }

    /// The text given for the setting, under KEY or (read from the file it names) KEY-file.
    private func given(_ setting: any AnySetting) throws -> (text: String, key: String, source: String)? {
        if let (text, source) = value(setting.key) { return (text, setting.key, source) }
        guard setting.orFile, let (path, source) = value(setting.key + "-file") else { return nil }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ConfigurationError(key: setting.key + "-file", source: source, reason: "cannot read \(path)")
        }
        return (String(decoding: data, as: UTF8.self), setting.key + "-file", source)
    }

    private static func readFile(_ path: String?) throws -> [String: String] {
        guard let path else { return [:] }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ConfigurationError(key: "config", source: path, reason: "cannot read the file")
        }
        guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw ConfigurationError(key: "config", source: path, reason: "not a JSON object of settings")
        }
        return object.mapValues { "\($0)" }
    }
}

public struct ConfigurationError: Error, CustomStringConvertible {
    public let key: String
    public let source: String
    public let reason: String

    public init(key: String, source: String, reason: String) {
        (self.key, self.source, self.reason) = (key, source, reason)
    }

    public var description: String { "configuration '\(key)' (from \(source)): \(reason)" }
}

/// Settings given by their declarations, as texts: the environment of a process the demo, a
/// drill or a test starts (`values[Settings.rateLimit] = "50"`), with no variable spelled by hand.
public struct SettingValues: Sendable, ExpressibleByDictionaryLiteral {
    private var texts: [String: String] = [:]

    public init() {}

    public init(dictionaryLiteral elements: (any AnySetting, String)...) {
        for (setting, text) in elements { texts[setting.key] = text }
    }

    public subscript(setting: any AnySetting) -> String? {
        get { texts[setting.key] }
        set { texts[setting.key] = newValue }
    }

    /// These values and then `other`'s, the latter winning.
    public func merging(_ other: SettingValues) -> SettingValues {
        var merged = self
        merged.texts.merge(other.texts) { $1 }
        return merged
    }

    /// As RECEIPTFLEET_<NAME> variables.
    public var environment: [String: String] {
        Dictionary(uniqueKeysWithValues: texts.map { (Settings.variable(ofKey: $0.key), $0.value) })
    }
}
