import Foundation
import PackagePlugin

/// Stamps the `BuildInfo` target with the git commit it is built from and the build's date, for
/// `receiptfleet --version` and the `receiptfleet_build_info` metric. The stamp is made again
/// whenever HEAD moves (a commit, a checkout: git appends to .git/logs/HEAD) and in every fresh
/// build folder, so a release build carries its own day; between commits nothing is recompiled.
@main
struct BuildStamp: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let package = context.package.directoryURL
        let stamp = context.pluginWorkDirectoryURL.appending(path: "Stamp.swift")
        let headLog = package.appending(path: ".git/logs/HEAD")
        return [.buildCommand(
            displayName: "Stamping BuildInfo with the commit and the date",
            executable: URL(fileURLWithPath: "/bin/sh"),
            arguments: ["-c", Self.script, "stamp", package.path, stamp.path],
            inputFiles: FileManager.default.fileExists(atPath: headLog.path) ? [headLog] : [],
            outputFiles: [stamp])]
    }

    /// $1: the package's folder; $2: the stamp. Outside a git checkout the commit is "unknown".
    static let script = #"""
        commit=$(git -C "$1" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
        date=$(date -u +%Y-%m-%d)
        printf '// Written by the BuildStamp plugin.\nlet stampedCommit = "%s"\nlet stampedDate = "%s"\n' "$commit" "$date" > "$2"
        """#
}
