import Foundation

/// A real `receiptfleet` process, started from the binary that `swift build` put beside the test
/// runner, with its output in a file the test can read.
public final class FleetProcess {
    public let pid: Int32
    private let process: Process
    private let output: URL

    /// The `receiptfleet` binary next to this test runner (RECEIPTFLEET_BINARY overrides it).
    public static var binary: URL {
        if let path = ProcessInfo.processInfo.environment["RECEIPTFLEET_BINARY"] { return URL(fileURLWithPath: path) }
        return URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
            .deletingLastPathComponent().appendingPathComponent("receiptfleet")
    }

    /// Starts `receiptfleet arguments…` with `environment` added to this process's own.
    public init(_ arguments: [String], environment: [String: String]) throws {
        guard FileManager.default.isExecutableFile(atPath: Self.binary.path) else {
            throw MissingBinary(path: Self.binary.path)
        }
        output = FileManager.default.temporaryDirectory.appendingPathComponent(uniqueName("receiptfleet") + ".log")
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        let handle = try FileHandle(forWritingTo: output)
        process = Process()
        process.executableURL = Self.binary
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
        pid = process.processIdentifier
    }

    deinit {
        if process.isRunning { kill(pid, SIGKILL) }
        try? FileManager.default.removeItem(at: output)
    }

    public func send(_ signal: Int32) { kill(pid, signal) }

    /// Waits up to `limit` for the process to end; its exit status, or nil if it still runs.
    public func exitStatus(within limit: Duration) async throws -> Int32? {
        try await eventually(within: limit, every: .milliseconds(50)) { !process.isRunning }
        return process.isRunning ? nil : process.terminationStatus
    }

    /// Everything it printed so far (standard output and error together).
    public var log: String { (try? String(contentsOf: output, encoding: .utf8)) ?? "" }

    struct MissingBinary: Error, CustomStringConvertible {
        let path: String
        var description: String { "no receiptfleet binary at \(path): run `swift build --build-tests` first" }
    }
}

/// Runs `receiptfleet arguments…` to its end (at most 60 s) and returns its exit status and output.
public func runFleetCommand(_ arguments: [String], environment: [String: String]) async throws -> (status: Int32, output: String) {
    let process = try FleetProcess(arguments, environment: environment)
    guard let status = try await process.exitStatus(within: .seconds(60)) else {
        process.send(SIGKILL)
        throw CommandDidNotEnd(arguments: arguments, output: process.log)
    }
    return (status, process.log)
}

public struct CommandDidNotEnd: Error, CustomStringConvertible {
    let arguments: [String]
    let output: String
    public var description: String { "receiptfleet \(arguments.joined(separator: " ")) did not end within 60 s:\n\(output)" }
}
