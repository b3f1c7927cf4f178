import ArgumentParser
import Foundation
import FleetConfiguration

// The option groups name each flag after its setting: `@Option(Settings.rateLimit) var rateLimit: String?`.
extension Option where Value == String? {
    public init(_ setting: some AnySetting) {
        precondition(setting.isFlag, "\(setting.key) is no flag in the registry")
        self.init(name: .customLong(setting.key), help: ArgumentHelp(setting.flagHelp), completion: setting.completion.map(CompletionKind.init))
    }
}

extension Flag where Value == Bool {
    public init(wrappedValue: Bool, _ setting: some AnySetting) {
        precondition(setting.isFlag, "\(setting.key) is no flag in the registry")
        self.init(wrappedValue: wrappedValue, name: .customLong(setting.key), help: ArgumentHelp(setting.help))
    }
}

/// A group of settings' flags (the CLI's FleetOptions, APIOptions, ConsoleOptions). Its properties
/// are the flags, each named as the registry names its setting (`rateLimit` for Settings.rateLimit),
/// which is how they are read, and groups of flags several commands share (ListenOptions).
public protocol SettingFlags: ParsableArguments {
    /// Whose flags they are.
    static var commands: Commands { get }
}

extension SettingFlags {
    /// The flags given on the command line, by key.
    var givenFlags: [String: String] {
        var flags: [String: String] = [:]
        for child in Mirror(reflecting: self).children {
            if let group = child.value as? any SharedSettingFlags {
                flags.merge(group.givenFlags) { $1 }
                continue
            }
            let property = String((child.label ?? "").drop { $0 == "_" })
            let value: String? = switch child.value {
            case let option as Option<String?>: option.wrappedValue
            case let flag as Flag<Bool>: flag.wrappedValue ? "true" : nil
            default: preconditionFailure("\(Self.self).\(property): declare it as @Option(Settings.…) var …: String?, "
                                         + "@Flag(Settings.…) var … = false, or @OptionGroup of SettingFlags")
            }
            guard let setting = Settings.byName[property], setting.isFlag, !setting.commands.isDisjoint(with: Self.commands) else {
                preconditionFailure("\(Self.self).\(property): Settings.\(property) is no flag setting of \(Self.commands.names)")
            }
            flags[setting.key] = value
        }
        return flags
    }
}

/// A group of flags inside another: its flags are the outer group's too.
private protocol SharedSettingFlags {
    var givenFlags: [String: String] { get }
}

extension OptionGroup: SharedSettingFlags where Value: SettingFlags {
    fileprivate var givenFlags: [String: String] { wrappedValue.givenFlags }
}

extension CompletionKind {
    init(_ completion: Completion) {
        switch completion {
        case .values(let values): self = .list(values)
        case .file: self = .file()
        }
    }
}

extension ResolvedConfiguration {
    /// The command line's settings: the fleet's flags (`fleet`), and the command's own groups
    /// (serve's APIOptions, console's ConsoleOptions), over the environment, the file and the defaults.
    public init(
        flags fleet: any SettingFlags, _ groups: any SettingFlags..., environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws {
        try self.init(
            flags: groups.reduce(fleet.givenFlags) { $0.merging($1.givenFlags) { $1 } },
            command: groups.last.map { type(of: $0).commands } ?? .fleet, environment: environment)
    }
}
