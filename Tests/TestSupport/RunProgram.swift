import Foundation

/// Runs `executable` with `arguments` to its end and returns its exit status and output (standard
/// output and error together). Blocks: call it on a thread of its own (`onOwnThread`).
public func runProgram(
    _ executable: String, _ arguments: [String], environment: [String: String]? = nil, in directory: URL? = nil
) throws -> (status: Int32, output: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    if let environment { process.environment = environment }
    process.currentDirectoryURL = directory
    let output = Pipe()
    process.standardOutput = output
    process.standardError = output
    try process.run()
    let printed = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: printed, as: UTF8.self))
}
