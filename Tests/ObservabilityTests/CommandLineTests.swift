import Fleet
import Foundation
import Observability
import Synchronization
import TestSupport
import Testing

/// The `receiptfleet` binary itself: its flag, its errors, and a worker process serving metrics.
@Suite struct CommandLineTests {
    @Test func aWorkerProcessServesMetricsUntilSIGTERMThenStopsCleanly() async throws {
        try await Deployment.with { deployment in
            let worker = try RunningCommand(["worker", "--concurrency", "1", "--metrics-address", "127.0.0.1:0"], deployment)
            let url = try await worker.waitForOutput(/http:\/\/127\.0\.0\.1:(\d+)\/metrics/)
            let metrics = try await fetch(url)
            #expect(metrics.status == 200)
            #expect(metrics.body.contains(#"receiptfleet_build_info{version="\#(BuildInfo.version)""#))
            #expect(metrics.body.contains("receiptfleet_jobs_processed_total"))
            #expect(try await fetch(url.replacingOccurrences(of: "/metrics", with: "/readyz")).status == 200)
            worker.terminate()
            #expect(try await worker.exitStatus() == 0)
            #expect(worker.output.contains("stopped cleanly"))
        }
    }

    @Test func aTakenMetricsPortStopsTheWorkerWithAClearMessage() async throws {
        try await Deployment.with { deployment in
            try await withMetricsServer(deployment.settings) { taken in
                let worker = try RunningCommand(["worker", "--metrics-address", "\(taken.address)"], deployment)
                #expect(try await worker.exitStatus() != 0)
                let output = worker.output
                #expect(output.contains("cannot serve metrics on \(taken.address)") && output.contains("in use"), "\(output)")
                #expect(output.contains("--metrics-address"))
            }
        }
    }

    @Test func configCheckShowsAndChecksTheMetricsAddress() async throws {
        let standard = try await RunningCommand(["config", "check"]).finished()
        #expect(standard.status == 0)
        #expect(standard.output.contains("127.0.0.1:9464 (/metrics, /healthz, /readyz)   (default)"))

        let off = try await RunningCommand(["config", "check"], environment: ["RECEIPTFLEET_METRICS_ADDRESS": "off"]).finished()
        #expect(off.output.contains("off   (environment RECEIPTFLEET_METRICS_ADDRESS)"))

        let file = FileManager.default.temporaryDirectory.appendingPathComponent(uniqueName("metrics-config") + ".json")
        try Data(#"{"metrics-address": "[::1]:9500"}"#.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let fromFile = try await RunningCommand(["config", "check", "--config", file.path]).finished()
        #expect(fromFile.output.contains("[::1]:9500 (/metrics, /healthz, /readyz)   (file)"))

        let bad = try await RunningCommand(["config", "check", "--metrics-address", "127.0.0.1"]).finished()
        #expect(bad.status != 0)
        #expect(bad.output.contains("configuration 'metrics-address' (from flag --metrics-address): '127.0.0.1' is not HOST:PORT"))
    }

    @Test func metricsAddressesAreReadStrictly() throws {
        #expect(try MetricsAddress.parse("0.0.0.0:9464") == MetricsAddress(host: "0.0.0.0", port: 9464))
        #expect(try MetricsAddress.parse("metrics.internal:0") == MetricsAddress(host: "metrics.internal", port: 0))
        #expect(try MetricsAddress.parse("[::1]:9464") == MetricsAddress(host: "::1", port: 9464))
        #expect(try MetricsAddress.parse("[::1]:9464")?.description == "[::1]:9464")
        #expect(try MetricsAddress.parse("OFF") == nil)
        for bad in ["9464", ":9464", "localhost:", "localhost:65536", "localhost:-1", "::1:9464", "localhost:http"] {
            #expect(throws: MetricsAddressError.self, "\(bad)") { try MetricsAddress.parse(bad) }
        }
    }
}

/// A `receiptfleet` process started from the binary that the build put beside this test bundle,
/// its standard output and error gathered together.
final class RunningCommand: Sendable {
    private let process: Process
    private let gathered = Mutex("")
    private let reading = DispatchSemaphore(value: 0)

    /// Runs `receiptfleet` with `arguments`, pointed at `deployment`'s servers (when given) and
    /// `environment`; nothing else of this process's RECEIPTFLEET_* settings reaches it.
    init(_ arguments: [String], _ deployment: Deployment? = nil, environment: [String: String] = [:]) throws {
        let binary = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("receiptfleet")
        guard FileManager.default.isExecutableFile(atPath: binary.path) else {
            throw BinaryMissing(path: binary.path)
        }
        var variables = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("RECEIPTFLEET_") }
        if let settings = deployment?.settings {
            variables["RECEIPTFLEET_REDIS_URL"] = settings.redisURL
            variables["RECEIPTFLEET_POSTGRES_URL"] = settings.postgresURL
            variables["RECEIPTFLEET_KEY_PREFIX"] = settings.keyPrefix
            variables["RECEIPTFLEET_APPSTORE_PRODUCTION_URL"] = settings.endpoints.production
            variables["RECEIPTFLEET_APPSTORE_SANDBOX_URL"] = settings.endpoints.sandbox
        }
        variables.merge(environment) { $1 }
        let pipe = Pipe()
        process = Process()
        process.executableURL = binary
        process.arguments = arguments
        process.environment = variables
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        Thread { [self] in
            while case let data = pipe.fileHandleForReading.availableData, !data.isEmpty {
                gathered.withLock { $0 += String(decoding: data, as: UTF8.self) }
            }
            reading.signal()
        }.start()
    }

    var output: String { gathered.withLock { $0 } }

    func terminate() { process.terminate() }

    /// Waits for the process to end (and its output to be read) and returns its exit status.
    func exitStatus() async throws -> Int32 {
        let (process, reading) = (process, reading)
        return try await onOwnThread {
            process.waitUntilExit()
            reading.wait()
            reading.signal()  // later calls return at once too
            return process.terminationStatus
        }
    }

    func finished() async throws -> (status: Int32, output: String) {
        (try await exitStatus(), output)
    }

    /// Waits (up to 30 s) for output matching `pattern`, and returns the match.
    func waitForOutput(_ pattern: Regex<(Substring, Substring)>) async throws -> String {
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            if let match = output.firstMatch(of: pattern) { return String(match.output.0) }
            guard process.isRunning else { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw Timeout(what: "output matching the pattern; got: \(output)")
    }

    struct BinaryMissing: Error, CustomStringConvertible {
        let path: String
        var description: String { "no receiptfleet binary at \(path); build it first (swift build --build-tests builds it)" }
    }
}
