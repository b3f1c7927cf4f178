import Foundation

/// Debian's stunnel4 terminating TLS in front of a plain HTTP server on 127.0.0.1, as a load
/// balancer would, with a certificate for 127.0.0.1 from a test CA made for the occasion (openssl):
/// clients meet a real TLS server and a real certificate check.
public final class TLSTerminator {
    /// Where stunnel listens for TLS.
    public let port: Int
    /// The PEM of the CA that signed the server's certificate: what a client must trust.
    public let caFile: String
    /// Another CA's PEM, which signed nothing here: a client trusting only it must refuse the server.
    public let otherCAFile: String
    private let directory: URL
    private let process: Process

    /// The stunnel program, or nil when stunnel4 is not installed (scripts/bootstrap installs it).
    public static let executable: String? = ["/usr/bin/stunnel4", "/usr/bin/stunnel"]
        .first { FileManager.default.isExecutableFile(atPath: $0) }

    /// Why TLS tests cannot run here, for their skip message.
    public static let missing = "stunnel4 is not installed (scripts/bootstrap installs it): TLS tests skipped"

    /// Terminates TLS for the server on 127.0.0.1:`upstreamPort`; returns once stunnel accepts connections.
    public init(forwardingTo upstreamPort: Int) throws {
        guard let executable = Self.executable else { throw TLSTerminatorError(message: Self.missing) }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(uniqueName("tls"))
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        self.directory = directory
        let file = { (name: String) in directory.appendingPathComponent(name).path }
        caFile = file("ca.pem")
        otherCAFile = file("other-ca.pem")
        try Self.makeCertificates(in: file)
        // stunnel takes a port, not a socket: a free one, given back just before it binds it.
        let (socket, port) = try bindLoopback()
        close(socket)
        self.port = port
        try Data("""
            foreground = yes
            pid =
            debug = warning
            [simulator]
            accept = 127.0.0.1:\(port)
            connect = 127.0.0.1:\(upstreamPort)
            cert = \(file("server.pem"))
            key = \(file("server.key"))

            """.utf8).write(to: URL(fileURLWithPath: file("stunnel.conf")))
        process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = [file("stunnel.conf")]
        process.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
        process.standardError = try FileHandle(forWritingTo: Self.emptyFile(file("stunnel.log")))
        try process.run()
        try waitUntilListening(log: file("stunnel.log"))
    }

    /// Stops stunnel and removes its files. SIGKILL: started from a test's thread, stunnel runs with
    /// SIGTERM blocked (the signal mask is inherited), so SIGTERM would leave it running.
    public func stop() {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: directory)
    }

    /// A test CA, a key and certificate for 127.0.0.1 signed by it, and a second CA that signed nothing.
    private static func makeCertificates(in file: (String) -> String) throws {
        let curve = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        try openssl(["req", "-x509"] + curve + ["-keyout", file("ca.key"), "-out", file("ca.pem"), "-days", "1",
                                              "-subj", "/CN=ReceiptFleet Test CA"])
        try openssl(["req", "-x509"] + curve + ["-keyout", file("other-ca.key"), "-out", file("other-ca.pem"), "-days", "1",
                                              "-subj", "/CN=ReceiptFleet Other CA"])
        try openssl(["req"] + curve + ["-keyout", file("server.key"), "-out", file("server.csr"), "-subj", "/CN=127.0.0.1"])
        try Data("subjectAltName = IP:127.0.0.1\n".utf8).write(to: URL(fileURLWithPath: file("server.ext")))
        try openssl(["x509", "-req", "-in", file("server.csr"), "-CA", file("ca.pem"), "-CAkey", file("ca.key"),
                     "-CAcreateserial", "-days", "1", "-extfile", file("server.ext"), "-out", file("server.pem")])
    }

    private static func openssl(_ arguments: [String]) throws {
        let (status, output) = try runProgram("/usr/bin/openssl", arguments)
        guard status == 0 else {
            throw TLSTerminatorError(message: "openssl \(arguments.joined(separator: " ")) failed: \(output)")
        }
    }

    private static func emptyFile(_ path: String) throws -> URL {
        let url = URL(fileURLWithPath: path)
        try Data().write(to: url)
        return url
    }

    /// Connects until stunnel accepts (at most 10 s); fails with its log if it exits first.
    private func waitUntilListening(log: String) throws {
        var listening = false
        eventuallyOnThisThread(within: .seconds(10), every: .milliseconds(50)) {
            guard let socket = try? connectLoopback(port) else { return !process.isRunning }
            close(socket)
            listening = true
            return true
        }
        if listening { return }
        let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        stop()
        throw TLSTerminatorError(message: "stunnel did not listen on 127.0.0.1:\(port): \(text)")
    }
}

public struct TLSTerminatorError: Error, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}
