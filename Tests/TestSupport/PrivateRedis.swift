import Foundation

/// A Redis server of one test's own, on a unix socket in a temporary folder, for a test that
/// changes what the whole server holds (SCRIPT FLUSH empties every client's script cache: on the
/// shared server, another test's pipeline of scripts would meet it halfway).
public final class PrivateRedis {
    /// The server's unix socket.
    public let socket: String
    private let directory: URL
    private let process: Process

    /// Starts `redis-server` (as `scripts/services` does, without persistence); returns once it
    /// answers PING on its socket.
    public init() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(uniqueName("redis"))
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        self.directory = directory
        socket = directory.appendingPathComponent("redis.sock").path
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/redis-server")
        process.arguments = ["--port", "0", "--unixsocket", socket, "--save", "", "--appendonly", "no",
                             "--dir", directory.path, "--loglevel", "warning"]
        process.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
        process.standardError = FileHandle(forWritingAtPath: "/dev/null")
        try process.run()
        let socket = socket
        let answers = { try runProgram("/usr/bin/redis-cli", ["-s", socket, "ping"]).output == "PONG\n" }
        guard try eventuallyOnThisThread(within: .seconds(10), { try answers() || !process.isRunning }), process.isRunning else {
            stop()
            throw PrivateRedisError(message: "redis-server did not answer on \(socket) within 10 s")
        }
    }

    /// Stops the server (SIGKILL: nothing of it needs keeping) and removes its folder.
    public func stop() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: directory)
    }
}

public struct PrivateRedisError: Error, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}
