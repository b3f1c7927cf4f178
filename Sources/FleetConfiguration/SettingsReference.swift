import Foundation

/// docs/operations.md's tables of the settings (`receiptfleet config reference`), and the same
/// as JSON, made from the registry.
extension Settings {
    /// Tables of the settings, one for every command and one for each command's own.
    public static func referenceMarkdown() -> String {
        var groups: [(commands: Commands, settings: [any AnySetting])] = []
        for setting in Settings.all {
            if let index = groups.firstIndex(where: { $0.commands == setting.commands }) {
                groups[index].settings.append(setting)
            } else {
                groups.append((setting.commands, [setting]))
            }
        }
        func cell(_ text: String) -> String { text.replacingOccurrences(of: "|", with: "\\|") }
        return groups.map { group in
            let title = group.commands == .fleet ? "Every command" : group.commands.names.map { "`\($0)`" }.joined(separator: " and ")
            let rows = group.settings.map { setting in
                let flag = switch setting.exposure {
                case .flag: "`--\(setting.key)`"
                case .variable: "—"
                case .secret: "never: a secret"
                }
                let meaning = setting.help + (setting.details.map { " " + $0 } ?? "")
                return "| \(setting.key) | \(flag) | \(cell(setting.defaultText)) | \(cell(setting.accepts)) | \(cell(meaning)) |"
            }
            return (["\(title):", "", "| key | flag | default | accepts | meaning |", "|---|---|---|---|---|"] + rows).joined(separator: "\n")
        }
        .joined(separator: "\n\n")
    }

    public static func referenceJSON() throws -> String {
        let settings = Settings.all.map { setting -> [String: Any] in
            [
                "key": setting.key, "flag": setting.isFlag, "secret": setting.exposure == .secret, "commands": setting.commands.names,
                "environment": setting.variable, "file": setting.inFile, "default": setting.defaultText, "accepts": setting.accepts,
                "help": setting.help,
            ]
        }
        return String(decoding: try JSONSerialization.data(withJSONObject: settings, options: [.sortedKeys, .prettyPrinted]), as: UTF8.self)
    }
}
