import Foundation
import TestSupport
import Testing

/// The Debian package scripts/package builds (scripts/test builds it first and names it in
/// RECEIPTFLEET_PACKAGE): its contents, its dependencies, lintian, the unpacked binary run with
/// the Swift toolchain out of reach, its units under systemd-analyze, and dpkg installing and
/// purging it.
@Suite("the Debian package: contents, lintian, a binary without the toolchain, units, install and purge")
struct DebianPackageTests {
    static func package() throws -> String {
        let path = ProcessInfo.processInfo.environment["RECEIPTFLEET_PACKAGE"] ?? ""
        guard !path.isEmpty, FileManager.default.fileExists(atPath: path) else {
            throw MissingPackage()
        }
        return path
    }

    struct MissingPackage: Error, CustomStringConvertible {
        var description: String {
            "no package: build one with scripts/package and name it in RECEIPTFLEET_PACKAGE (scripts/test does both)"
        }
    }

    /// The package unpacked into a folder of its own.
    static func unpacked() async throws -> URL {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent(uniqueName("deb-root"))
        let result = try await run("dpkg-deb", ["-x", try package(), root.path], from: "dpkg")
        #expect(result.succeeded, "\(result)")
        return root
    }

    @Test func itHoldsWhatAServerNeeds() async throws {
        let contents = try await run("dpkg-deb", ["--contents", try Self.package()], from: "dpkg")
        #expect(contents.succeeded, "\(contents)")
        for path in [
            "./usr/bin/receiptfleet", "./lib/systemd/system/receiptfleet-api.service", "./lib/systemd/system/receiptfleet-worker@.service",
            "./lib/systemd/system/receiptfleet-schedule.timer", "./lib/systemd/system/receiptfleet-prune.timer",
            "./lib/systemd/system/receiptfleet-notifications.timer",
            "./lib/systemd/system/receiptfleet.target", "./lib/systemd/system/receiptfleet-console.service",
            "./lib/systemd/system/receiptfleet-.service.d/10-receiptfleet.conf",
            "./usr/share/receiptfleet/examples/receiptfleet.json", "./usr/share/receiptfleet/examples/receiptfleet.env.example",
            "./usr/share/doc/receiptfleet/copyright", "./usr/share/man/man1/receiptfleet.1.gz",
            "./usr/share/bash-completion/completions/receiptfleet", "./usr/share/zsh/vendor-completions/_receiptfleet",
            "./usr/share/fish/vendor_completions.d/receiptfleet.fish",
        ] {
            #expect(contents.output.contains(" \(path)\n"), "the package lacks \(path)")
        }
        #expect(contents.output.contains("-rwxr-xr-x root/root"), "the binary is root's and executable")
        #expect(!contents.output.contains(" ./etc/"), "configuration is the operator's: postinst makes it, the package ships none")
    }

    /// The man page covers the subcommands, and bash takes the completion script.
    @Test func theManPageAndTheCompletionsAreTheBinarys() async throws {
        let root = try await Self.unpacked()
        let page = try await run("zcat", [root.appendingPathComponent("usr/share/man/man1/receiptfleet.1.gz").path], from: "gzip")
        #expect(page.succeeded && page.output.contains(".Dt RECEIPTFLEET 1"), "\(page.output.prefix(500))")
        for subcommand in ["worker", "schedule", "serve", "console", "migrate", "resume", "prune", "notifications"] {
            #expect(page.output.contains(".It Em \(subcommand)"), "the man page lacks \(subcommand)")
        }
        // roff is ASCII: the help's other characters are escapes man renders, never dropped.
        #expect(page.output.utf8.allSatisfy { $0 < 0x80 }, "the man page holds raw non-ASCII bytes")
        #expect(page.output.contains(#"150ms\[u00B1]50ms"#), "± is lost from the simulator's latency")
        let script = root.appendingPathComponent("usr/share/bash-completion/completions/receiptfleet").path
        let bash = try await run("bash", ["-c", "source \"$1\" && complete -p receiptfleet", "bash", script], from: "bash")
        #expect(bash.succeeded && bash.output.contains("-F _receiptfleet receiptfleet"), "\(bash)")
        // Values are offered where a flag or argument takes one of a few.
        let completions = try String(contentsOfFile: script, encoding: .utf8)
        #expect(completions.contains(#"'trace'$'\n''debug'$'\n''info'"#), "--log-level offers its levels")
        #expect(completions.contains(#"'verify-receipt'$'\n''server-api'$'\n''default'"#), "set-backend offers the backends")
    }

    @Test func itDependsOnTheRuntimeLibrariesNotTheirDevelopmentPackages() async throws {
        let depends = try await run("dpkg-deb", ["--field", try Self.package(), "Depends"], from: "dpkg")
        for library in ["libhiredis0.14", "libcurl4", "libpq5"] {
            #expect(depends.output.contains(library), "Depends: \(depends.output)")
        }
        #expect(!depends.output.contains("-dev"), "Depends: \(depends.output)")
    }

    /// Each override the package carries says why in scripts/package.
    @Test func lintianFindsNoErrorsOrWarnings() async throws {
        let result = try await run("lintian", ["--tag-display-limit", "0", try Self.package()], from: "lintian")
        let findings = result.output.split(separator: "\n").filter { $0.hasPrefix("E: ") || $0.hasPrefix("W: ") }
        #expect(findings.isEmpty, "lintian:\n\(result.output)")
    }

    @Test func theUnpackedBinaryNeedsNoToolchain() async throws {
        let root = try await Self.unpacked()
        let binary = root.appendingPathComponent("usr/bin/receiptfleet").path
        let libraries = try await run("ldd", [binary], from: "libc-bin")
        #expect(libraries.succeeded, "\(libraries)")
        #expect(!libraries.output.contains("/opt/swift") && !libraries.output.contains("not found"), "ldd:\n\(libraries.output)")
        #expect(!libraries.output.contains("libswift") && !libraries.output.contains("libFoundation"), "ldd:\n\(libraries.output)")
        let dynamic = try await run("readelf", ["--dynamic", binary], from: "binutils")
        #expect(!dynamic.output.contains("/opt/swift"), "a run path into the toolchain:\n\(dynamic.output)")

        // Nothing of the toolchain in reach: no PATH into it, no library path.
        let bare = ["PATH": "/usr/bin:/bin", "HOME": "/nonexistent"]
        let version = try await onOwnThread { try runProgram("/usr/bin/env", ["-i"] + bare.map { "\($0.key)=\($0.value)" } + [binary, "--version"]) }
        #expect(version.status == 0)
        #expect(version.output.range(of: #"^\d+\.\d+\.\d+ \(commit [0-9a-f]{12}, built \d{4}-\d{2}-\d{2}, Swift \d"#, options: .regularExpression) != nil,
                "--version says: \(version.output)")
        let servers = [
            "RECEIPTFLEET_REDIS_URL": TestServers.redisURL, "RECEIPTFLEET_POSTGRES_URL": TestServers.postgresURL,
            "RECEIPTFLEET_SHARED_SECRET": "package-test-secret",
        ]
        let check = try await onOwnThread {
            try runProgram("/usr/bin/env", ["-i"] + bare.merging(servers) { $1 }.map { "\($0.key)=\($0.value)" } + [binary, "config", "check"])
        }
        #expect(check.status == 0 && check.output.contains("The configuration is valid, but it leaves out:"), "config check:\n\(check.output)")
        #expect(check.output.contains("API tokens: `serve` refuses to start") && !check.output.contains("a shared secret for"),
                "the package's bare configuration has a secret and no tokens:\n\(check.output)")
    }

    /// systemd-analyze checks that ExecStart's binary exists on this machine, where /usr/bin has no
    /// receiptfleet: the units are checked in a copy that runs the unpacked binary from where it is.
    @Test func systemdAcceptsThePackagedUnits() async throws {
        let root = try await Self.unpacked()
        let units = root.appendingPathComponent("lib/systemd/system")
        let binary = root.appendingPathComponent("usr/bin/receiptfleet").path
        for unit in try Repository.files(in: units, endingIn: [".service"]) {
            let text = try String(contentsOf: unit, encoding: .utf8)
            #expect(text.contains("ExecStart=/usr/bin/receiptfleet "), "\(unit.lastPathComponent) runs something else")
            try text.replacingOccurrences(of: "ExecStart=/usr/bin/receiptfleet ", with: "ExecStart=\(binary) ")
                .write(to: unit, atomically: true, encoding: .utf8)
        }
        let result = try await systemdAnalyze(["verify", "--man=no"] + SystemdUnitTests.units.map { units.appendingPathComponent($0).path })
        #expect(result.succeeded && result.output.isEmpty, "\(result)")
    }

    /// A throwaway root that dpkg installs into, as Debian's slim images do: without /usr/share/doc.
    struct DpkgRoot {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent(uniqueName("dpkg-root"))
        var database: URL { root.appendingPathComponent("var/lib/dpkg") }
        var config: URL { root.appendingPathComponent("etc/receiptfleet") }

        init() throws {
            for folder in ["info", "updates"] {
                try FileManager.default.createDirectory(at: database.appendingPathComponent(folder), withIntermediateDirectories: true)
            }
            _ = FileManager.default.createFile(atPath: database.appendingPathComponent("status").path, contents: nil)
        }

        /// The root holds no libc to depend on, nor a shell to chroot into: the package's scripts
        /// run outside it, with DPKG_ROOT naming it.
        func dpkg(_ arguments: [String]) async throws -> CommandResult {
            try await run("dpkg", [
                "--root=\(root.path)", "--log=/dev/null", "--force-depends", "--force-script-chrootless",
                "--path-exclude=/usr/share/doc/*", "--path-include=/usr/share/doc/*/copyright",
            ] + arguments, from: "dpkg")
        }

        func install() async throws -> CommandResult { try await dpkg(["--install", try DebianPackageTests.package()]) }

        func mode(_ path: String) throws -> Int {
            (try FileManager.default.attributesOfItem(atPath: config.appendingPathComponent(path).path)[.posixPermissions] as? Int) ?? -1
        }
    }

    /// postinst makes /etc/receiptfleet from what the package ships outside /usr/share/doc, keeps
    /// the operator's edits when the package is installed again (an upgrade), and starts nothing;
    /// `dpkg --verify` checks the installed files against the package's checksums.
    @Test func dpkgInstallsItAndPostinstMakesTheConfigurationOnce() async throws {
        let target = try DpkgRoot()
        let first = try await target.install()
        #expect(first.succeeded, "\(first)")
        #expect(!FileManager.default.fileExists(atPath: target.root.appendingPathComponent("usr/share/doc/receiptfleet/changelog.gz").path),
                "dpkg was told to leave the docs out")
        #expect(try target.mode("") == 0o755)
        #expect(try target.mode("receiptfleet.json") == 0o644)
        #expect(try target.mode("receiptfleet.env") == 0o600, "the environment file holds the database passwords")

        let env = target.config.appendingPathComponent("receiptfleet.env")
        try "RECEIPTFLEET_REDIS_URL=redis://:mine@redis/0\n".write(to: env, atomically: true, encoding: .utf8)
        let again = try await target.install()
        #expect(again.succeeded, "\(again)")
        #expect(try String(contentsOf: env, encoding: .utf8) == "RECEIPTFLEET_REDIS_URL=redis://:mine@redis/0\n")

        // Every file is as the package's checksums say: dpkg names only what differs, and the docs
        // it was told to leave out.
        let verify = try await target.dpkg(["--verify", "receiptfleet"])
        let differences = verify.output.split(separator: "\n").filter { !$0.hasPrefix("missing") || !$0.contains(" /usr/share/doc/") }
        #expect(verify.succeeded && differences.isEmpty, "\(verify)")
        try Data("tampered".utf8).write(to: target.root.appendingPathComponent("lib/systemd/system/receiptfleet-api.service"))
        let tampered = try await target.dpkg(["--verify", "receiptfleet"])
        #expect(tampered.output.contains("??5??????   /lib/systemd/system/receiptfleet-api.service"),
                "dpkg --verify checks the package's checksums: \(tampered)")

        let postinst = try String(contentsOf: target.database.appendingPathComponent("info/receiptfleet.postinst"), encoding: .utf8)
        #expect(!postinst.contains("systemctl start") && !postinst.contains("systemctl enable") && !postinst.contains("deb-systemd-invoke"))
    }

    /// Purging deletes the configuration postinst made and the units' enablement links, and keeps
    /// what the operator added beside it (a secret), saying so.
    @Test func purgingDeletesThePackagesConfigurationAndKeepsTheOperatorsFiles() async throws {
        let target = try DpkgRoot()
        #expect(try await target.install().succeeded)
        try "secret\n".write(to: target.config.appendingPathComponent("shared-secret"), atomically: true, encoding: .utf8)
        let wants = target.root.appendingPathComponent("etc/systemd/system/receiptfleet.target.wants")
        try FileManager.default.createDirectory(at: wants, withIntermediateDirectories: true)
        let link = wants.appendingPathComponent("receiptfleet-relay.service")
        try FileManager.default.createSymbolicLink(atPath: link.path, withDestinationPath: "/lib/systemd/system/receiptfleet-relay.service")

        let purge = try await target.dpkg(["--purge", "receiptfleet"])
        #expect(purge.succeeded, "\(purge)")
        #expect(purge.output.contains("kept \(target.config.path), which holds files the package did not make: shared-secret"), "\(purge)")
        let left = try FileManager.default.contentsOfDirectory(atPath: target.config.path)
        #expect(left == ["shared-secret"], "the package's configuration goes, the operator's secret stays: \(left)")
        #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: link.path)) == nil, "the enablement link is gone")
        #expect(!FileManager.default.fileExists(atPath: target.root.appendingPathComponent("usr/bin/receiptfleet").path))
    }
}
