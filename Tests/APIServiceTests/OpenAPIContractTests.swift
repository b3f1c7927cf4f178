import Foundation
import TestSupport
import Testing

/// docs/openapi.yaml against the live server: schemathesis (installed by scripts/bootstrap)
/// generates requests for every documented operation, valid and invalid, and checks that each
/// answer's status, content type, headers and body are the documented ones, that no request
/// makes the server fail, and that the token is required where the document says so.
@Suite struct OpenAPIContractTests {
    static var schemathesis: String {
        let environment = ProcessInfo.processInfo.environment
        if let path = environment["RECEIPTFLEET_SCHEMATHESIS"], !path.isEmpty { return path }
        let cache = environment["XDG_CACHE_HOME"] ?? (environment["HOME"] ?? "/root") + "/.cache"
        return (environment["RECEIPTFLEET_TOOLS"] ?? cache + "/receiptfleet") + "/venv/bin/schemathesis"
    }

    @Test func theServerAnswersAsDocsOpenAPIYamlSays() async throws {
        let executable = Self.schemathesis
        try #require(FileManager.default.isExecutableFile(atPath: executable),
                     "schemathesis is not installed at \(executable): run scripts/bootstrap")
        // The Server API too, so that /v1/transactions answers as it does where a key is configured.
        try await APIHarness.with(serverAPI: true) { api in
            // One subscription, so that reads can find something.
            let registered = try await api.post("/v1/receipts", ["receipt": api.receipt().receiptData, "account_id": "acct-1"])
            #expect(registered.status == 200)
            let arguments = [
                "run", TestServers.repositoryRoot + "/docs/openapi.yaml", "--url", api.baseURL,
                "--header", "Authorization: Bearer \(api.token)",
                "--checks", "not_a_server_error,status_code_conformance,content_type_conformance,"
                    + "response_headers_conformance,response_schema_conformance,ignored_auth",
                "--phases", "examples,coverage,fuzzing", "--max-examples", "30", "--seed", "20261123",
                "--workers", "1", "--request-timeout", "20", "--suppress-health-check", "all",
            ]
            let (status, output) = try await onOwnThread { try Self.run(executable, arguments, timeoutSeconds: 300) }
            #expect(status == 0, "schemathesis found answers that differ from docs/openapi.yaml:\n\(output.suffix(6_000))")
        }
    }

    /// Runs a program, its output collected, ended by coreutils' `timeout` after `timeoutSeconds` (status 124).
    private static func run(_ executable: String, _ arguments: [String], timeoutSeconds: Int) throws -> (Int32, String) {
        var environment = ProcessInfo.processInfo.environment
        environment["NO_COLOR"] = "1"
        return try runProgram("/usr/bin/timeout", ["\(timeoutSeconds)", executable] + arguments, environment: environment)
    }
}
