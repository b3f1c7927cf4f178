import Foundation
import TestSupport
import Testing

/// scripts/install into a throwaway root: the binary (stripped, with its man page and completions), the units pointed at it, /etc/receiptfleet
/// with the examples, and an operator's configuration kept on the next install. It builds with
/// scripts/build-release: under scripts/test (RECEIPTFLEET_BUILD=debug) that links the debug build
/// statically, as for the package; otherwise the release build must be there already.
@Suite struct InstallTests {
    @Test func installPutsTheBinaryUnitsAndExampleConfigurationInPlaceAndKeepsTheOperatorsFiles() async throws {
        if ProcessInfo.processInfo.environment["RECEIPTFLEET_BUILD"] != "debug" {
            let release = Repository.url(".build-release/release/receiptfleet").path
            try #require(FileManager.default.isExecutableFile(atPath: release),
                         "no release build: run scripts/build-release, or set RECEIPTFLEET_BUILD=debug (scripts/test does)")
        }
        let root = FileManager.default.temporaryDirectory.appendingPathComponent(uniqueName("install-root"))
        let install = { @Sendable in
            try runProgram(Repository.url("scripts/install").path, ["--root", root.path, "--prefix", "/opt/rf", "--systemd"])
        }
        let first = try await onOwnThread(install)
        #expect(first.status == 0, "\(first.output)")
        #expect(first.output.contains("/etc/receiptfleet/console-tokens") && first.output.contains("receiptfleet-console"),
                "the next steps say how to give operators the console: \(first.output)")

        let binary = root.appendingPathComponent("opt/rf/bin/receiptfleet").path
        #expect(FileManager.default.isExecutableFile(atPath: binary))
        let version = try await onOwnThread { try runProgram(binary, ["--version"]) }
        #expect(version.output.contains("(commit "), "--version: \(version.output)")
        // Stripped, with its man page and completions where a local install's are found.
        let symbols = try await onOwnThread { try runProgram("/usr/bin/nm", [binary]) }
        #expect(symbols.output.contains("no symbols"), "the binary is not stripped")
        for file in ["opt/rf/share/man/man1/receiptfleet.1.gz", "opt/rf/share/bash-completion/completions/receiptfleet",
                     "opt/rf/share/zsh/site-functions/_receiptfleet", "opt/rf/share/fish/vendor_completions.d/receiptfleet.fish"] {
            #expect(FileManager.default.fileExists(atPath: root.appendingPathComponent(file).path), "\(file) is missing")
        }
        let api = try String(contentsOf: root.appendingPathComponent("etc/systemd/system/receiptfleet-api.service"), encoding: .utf8)
        #expect(api.contains("ExecStart=/opt/rf/bin/receiptfleet serve"))
        #expect(FileManager.default.fileExists(atPath: root.appendingPathComponent(
            "etc/systemd/system/receiptfleet-.service.d/10-receiptfleet.conf").path))
        let env = root.appendingPathComponent("etc/receiptfleet/receiptfleet.env")
        let mode = try FileManager.default.attributesOfItem(atPath: env.path)[.posixPermissions] as? Int
        #expect(mode == 0o600, "the environment file holds the database passwords")
        #expect(!FileManager.default.fileExists(atPath: root.appendingPathComponent("etc/receiptfleet/shared-secret").path),
                "secrets are the operator's to write")

        // The operator's configuration survives the next install.
        try "RECEIPTFLEET_REDIS_URL=redis://:mine@redis/0\n".write(to: env, atomically: false, encoding: .utf8)
        let second = try await onOwnThread(install)
        #expect(second.status == 0 && second.output.contains("kept \(env.path)"), "\(second.output)")
        #expect(try String(contentsOf: env, encoding: .utf8) == "RECEIPTFLEET_REDIS_URL=redis://:mine@redis/0\n")
    }
}
