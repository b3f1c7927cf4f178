import Foundation
import TestSupport

/// The checkout's deployment files.
enum Repository {
    static let root = URL(fileURLWithPath: TestServers.repositoryRoot)

    static func url(_ path: String) -> URL { root.appendingPathComponent(path) }

    static func text(_ path: String) throws -> String { try String(contentsOf: url(path), encoding: .utf8) }

    /// The files directly in `directory` whose names end in one of `suffixes`, sorted by name.
    static func files(in directory: URL, endingIn suffixes: [String]) throws -> [URL] {
        try FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: nil)
            .filter { url in suffixes.contains { url.lastPathComponent.hasSuffix($0) } }
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
    }

    /// A fresh copy of `path` (a folder) in a temporary folder, for checks that change or add files.
    static func copy(_ path: String) throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(uniqueName("deploy"))
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let copy = directory.appendingPathComponent(url(path).lastPathComponent)
        try FileManager.default.copyItem(at: url(path), to: copy)
        return copy
    }
}

/// A tool the checks need that is not installed. The test fails (CI runs scripts/bootstrap first, so
/// a missing tool is a broken bootstrap, never a reason to skip).
struct MissingTool: Error, CustomStringConvertible {
    let tool: String
    let package: String

    var description: String { "\(tool) is not installed: run scripts/bootstrap (it installs \(package))" }
}

/// How a command ended and what it printed (standard output and error together).
struct CommandResult: Sendable, CustomStringConvertible {
    let status: Int32
    let output: String

    var succeeded: Bool { status == 0 }
    var description: String { "exit status \(status):\n\(output)" }
}

/// Runs `tool` (a path, or found on PATH) on a thread of its own: the test waits without blocking Swift's pool.
func run(_ tool: String, _ arguments: [String], from package: String, in directory: URL? = nil) async throws -> CommandResult {
    let searchPath = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
    let candidates = tool.hasPrefix("/") ? [tool] : searchPath.split(separator: ":").map { "\($0)/\(tool)" }
    guard let executable = candidates.first(where: FileManager.default.isExecutableFile(atPath:))
    else { throw MissingTool(tool: tool, package: package) }
    return try await onOwnThread {
        let (status, output) = try runProgram(executable, arguments, in: directory)
        return CommandResult(status: status, output: output)
    }
}

/// The python of the tools' virtual environment that scripts/bootstrap makes (with PyYAML,
/// kubernetes-validate and check-jsonschema): RECEIPTFLEET_TOOLS, else $XDG_CACHE_HOME or ~/.cache,
/// then receiptfleet/venv.
let toolsPython: String = {
    let environment = ProcessInfo.processInfo.environment
    let cache = environment["XDG_CACHE_HOME"] ?? (environment["HOME"] ?? "/root") + "/.cache"
    return (environment["RECEIPTFLEET_TOOLS"] ?? cache + "/receiptfleet") + "/venv/bin/python"
}()

/// Runs the tools' python with `arguments`; a module that is not installed is a `MissingTool`.
func python(_ arguments: [String], needs package: String) async throws -> CommandResult {
    guard FileManager.default.isExecutableFile(atPath: toolsPython) else {
        throw MissingTool(tool: toolsPython, package: "a Python virtual environment with \(package)")
    }
    let result = try await run(toolsPython, arguments, from: package)
    if result.output.contains("ModuleNotFoundError") { throw MissingTool(tool: "the Python module of \(package)", package: package) }
    return result
}

/// The documents of a YAML file, parsed by PyYAML's safe loader (Foundation reads no YAML) and
/// handed over as JSON.
func yamlDocuments(_ url: URL) async throws -> [YAMLNode] {
    try await yamlDocuments(of: [url])[0]
}

/// The documents of each file, in one run of python.
func yamlDocuments(of urls: [URL]) async throws -> [[YAMLNode]] {
    let json = FileManager.default.temporaryDirectory.appendingPathComponent(uniqueName("yaml") + ".json")
    defer { try? FileManager.default.removeItem(at: json) }
    let script = """
        import json, sys, yaml
        files = []
        for path in sys.argv[2:]:
            with open(path) as source:
                try:
                    files.append(list(yaml.safe_load_all(source)))
                except yaml.YAMLError as error:
                    sys.exit(f"{path}: {error}")
        with open(sys.argv[1], "w") as target:
            json.dump(files, target, default=str)
        """
    let result = try await python(["-c", script, json.path] + urls.map(\.path), needs: "PyYAML")
    guard result.succeeded else { throw UnreadableFile(reason: result.output) }
    let files = try JSONSerialization.jsonObject(with: Data(contentsOf: json)) as? [[Any]] ?? []
    return files.map { documents in documents.filter { !($0 is NSNull) }.map(YAMLNode.init) }
}

func jsonDocument(_ url: URL) throws -> YAMLNode {
    do {
        return YAMLNode(try JSONSerialization.jsonObject(with: Data(contentsOf: url)))
    } catch {
        throw UnreadableFile(reason: "\(url.lastPathComponent): \(error)")
    }
}

/// A YAML or JSON file that does not parse; the reason names the file.
struct UnreadableFile: Error, CustomStringConvertible {
    let reason: String
    var description: String { "a file that does not parse: \(reason)" }
}

/// A parsed YAML or JSON value, read by path: `node["spec"]["template"]` is missing (not a crash)
/// when any step is.
struct YAMLNode {
    let value: Any?

    init(_ value: Any?) { self.value = value is NSNull ? nil : value }

    subscript(key: String) -> YAMLNode { YAMLNode((value as? [String: Any])?[key]) }

    var exists: Bool { value != nil }
    var string: String? { value as? String }
    /// Numbers, and numbers written as strings ("45").
    var number: Double? { (value as? NSNumber)?.doubleValue ?? string.flatMap(Double.init) }
    var bool: Bool? { value as? Bool }
    var array: [YAMLNode] { ((value as? [Any]) ?? []).map(YAMLNode.init) }
    var dictionary: [String: YAMLNode] { ((value as? [String: Any]) ?? [:]).mapValues(YAMLNode.init) }
    /// A map of strings, such as labels.
    var strings: [String: String] { (value as? [String: Any])?.compactMapValues { $0 as? String } ?? [:] }
}

/// GitHub's anchor for a Markdown heading: lower case, punctuation dropped, spaces to hyphens.
func anchor(_ heading: String) -> String {
    String(heading.lowercased().compactMap { character -> Character? in
        if character.isLetter || character.isNumber || character == "-" || character == "_" { return character }
        return character == " " ? "-" : nil
    })
}
