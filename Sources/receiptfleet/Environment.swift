import ArgumentParser
import Foundation

/// The value of an environment variable that stands in for a required option.
func environment(_ name: String, or option: String) throws -> String {
    guard let value = ProcessInfo.processInfo.environment[name], !value.isEmpty else {
        throw ValidationError("Give \(option), or set \(name).")
    }
    return value
}
