import Foundation
import Testing

/// No Docker engine runs where ReceiptFleet is developed, so Compose and the Dockerfile are
/// checked as files: the Compose specification's schema, then what the schema cannot see.
@Suite("Compose file and Dockerfile, checked as files")
struct ComposeTests {
    static let compose = Repository.url("deploy/compose/compose.yaml")

    /// compose.yaml and every override beside it (compose.*.yaml; their merged references are
    /// checked by RedisTLSSidecarTests).
    @Test func composeMatchesTheComposeSpecification() async throws {
        let files = try Repository.files(in: Self.compose.deletingLastPathComponent(), endingIn: [".yaml"])
            .filter { $0.lastPathComponent.hasPrefix("compose.") }
        #expect(files.count >= 2, "\(files)")
        let result = try await python(["-m", "check_jsonschema", "--builtin-schema", "vendor.compose-spec"] + files.map(\.path),
                                      needs: "check-jsonschema")
        #expect(result.succeeded, "\(result)")
    }

    @Test func composeHasNoDanglingReferences() async throws {
        let problems = composeProblems(try await yamlDocuments(Self.compose)[0], folder: Self.compose.deletingLastPathComponent())
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
    }

    @Test func composeRunsTheWholeFleet() async throws {
        let services = try await yamlDocuments(Self.compose)[0]["services"]
        for name in ["redis", "postgres", "simulator", "migrate", "worker", "relay", "api", "prometheus", "grafana"] {
            #expect(services[name].exists, "no \(name) service")
        }
        #expect(services["redis"]["command"].array.compactMap(\.string).joined(separator: " ").contains("--appendonly yes"))
        #expect((services["worker"]["deploy"]["replicas"].number ?? 0) > 1)
        #expect(services["worker"]["depends_on"]["migrate"]["condition"].string == "service_completed_successfully")
        #expect(services["api"]["command"].array.compactMap(\.string).starts(with: ["serve", "--address"]))
        #expect(services["simulator"]["command"].array.compactMap(\.string).starts(with: ["simulate-appstore", "serve"]))
    }

    /// composeHasNoDanglingReferences would notice a wrong service name or a missing file.
    @Test func aDanglingReferenceIsCaught() async throws {
        let folder = try Repository.copy("deploy/compose")
        let compose = folder.appendingPathComponent("compose.yaml")
        try String(contentsOf: compose, encoding: .utf8)
            .replacingOccurrences(of: "      - prometheus\n", with: "      - prometheuss\n")
            .replacingOccurrences(of: "./grafana/dashboards.yaml:", with: "./grafana/dashboard.yaml:")
            .write(to: compose, atomically: true, encoding: .utf8)
        let problems = composeProblems(try await yamlDocuments(compose)[0], folder: folder)
        #expect(problems.contains { $0.contains("prometheuss") }, "\(problems)")
        #expect(problems.contains { $0.contains("dashboard.yaml") }, "\(problems)")
    }

    @Test func theDockerfileBuildsWithSwiftAndRunsSlimAndUnprivileged() throws {
        let stages = dockerStages(try Repository.text("Dockerfile"))
        #expect(stages.count == 2)
        let build = try #require(stages.first)
        let runtime = try #require(stages.last)
        #expect(build.from.hasPrefix("swift:6.") && build.from.hasSuffix("-bookworm AS build"), "\(build.from)")
        #expect(runtime.from == "debian:bookworm-slim")
        #expect(runtime.instructions.contains { $0.hasPrefix("COPY --from=build ") })
        let user = try #require(runtime.instructions.last { $0.hasPrefix("USER ") })
        #expect(!["USER root", "USER 0", "USER 0:0"].contains(user), "\(user)")
        #expect(runtime.instructions.contains("ENTRYPOINT [\"/usr/local/bin/receiptfleet\"]"))
    }

    /// The build stage installs the -dev packages Package.swift names for its C libraries, and the
    /// runtime stage the libraries those packages belong to (as Debian's own dependencies say).
    @Test func theDockerfileInstallsTheCLibrariesThePackageLinks() async throws {
        let manifest = try Repository.text("Package.swift")
        let devPackages = manifest.matches(of: /\.apt\(\["([^"]+)"\]\)/).map { String($0.output.1) }
        #expect(devPackages.count == 3, "\(devPackages)")
        let stages = dockerStages(try Repository.text("Dockerfile"))
        let buildInstalls = stages.first?.installed ?? []
        let runtimeInstalls = stages.last?.installed ?? []
        #expect(runtimeInstalls.contains("ca-certificates"))
        for devPackage in devPackages {
            #expect(buildInstalls.contains(devPackage), "the build stage lacks \(devPackage)")
            let depends = try await run("dpkg-query", ["-W", "-f=${Depends}", devPackage], from: "dpkg (scripts/bootstrap installs \(devPackage))")
            #expect(depends.succeeded, "\(depends)")
            let library = depends.output.split(separator: ",")
                .map { $0.trimmingCharacters(in: .whitespaces).prefix { $0 != " " } }
                .first { $0.hasPrefix("lib") && !$0.hasSuffix("-dev") && $0.last?.isNumber == true }
            let runtimeLibrary = try #require(library.map(String.init), "no runtime library in \(devPackage)'s dependencies: \(depends.output)")
            #expect(runtimeInstalls.contains(runtimeLibrary), "the runtime stage lacks \(runtimeLibrary) (for \(devPackage))")
        }
    }

    @Test func theDockerContextHoldsWhatTheBuildCopies() throws {
        let ignore = try Repository.text(".dockerignore").split(separator: "\n").map(String.init)
        for path in ["Package.swift", "Sources", "Tests"] {
            #expect(ignore.contains("!" + path), ".dockerignore leaves out \(path), which the build copies")
        }
    }
}

/// Services that name services that do not exist, and files that are not there.
func composeProblems(_ compose: YAMLNode, folder: URL) -> [String] {
    var problems: [String] = []
    let services = compose["services"].dictionary
    let secrets = compose["secrets"].dictionary
    let volumes = compose["volumes"].dictionary
    func exists(_ path: String) -> Bool {
        FileManager.default.fileExists(atPath: folder.appendingPathComponent(path).standardizedFileURL.path)
    }
    for (name, service) in services.sorted(by: { $0.key < $1.key }) {
        if !service["image"].exists && !service["build"].exists { problems.append("\(name): neither image nor build") }
        if let context = service["build"]["context"].string {
            let dockerfile = context + "/" + (service["build"]["dockerfile"].string ?? "Dockerfile")
            if !exists(dockerfile) { problems.append("\(name): no \(dockerfile)") }
        }
        let dependencies = service["depends_on"].array.compactMap(\.string) + service["depends_on"].dictionary.keys
        for dependency in dependencies where services[dependency] == nil {
            problems.append("\(name) depends on \(dependency), which is no service")
        }
        for secret in service["secrets"].array.compactMap(\.string) where secrets[secret] == nil {
            problems.append("\(name) uses secret \(secret), which is not declared")
        }
        for volume in service["volumes"].array.compactMap(\.string) {
            let source = String(volume.prefix { $0 != ":" })
            if source.hasPrefix(".") {
                if !exists(source) { problems.append("\(name) mounts \(source), which does not exist") }
            } else if volumes[source] == nil {
                problems.append("\(name) mounts volume \(source), which is not declared")
            }
        }
    }
    for (name, secret) in secrets {
        if let file = secret["file"].string, !exists(file) { problems.append("secret \(name): no file \(file)") }
    }
    return problems
}

/// A Dockerfile's stages: the FROM line and the instructions after it (continuation lines joined).
func dockerStages(_ dockerfile: String) -> [(from: String, instructions: [String], installed: Set<String>)] {
    let joined = dockerfile.replacingOccurrences(of: "\\\n", with: " ")
    let instructions = joined.split(separator: "\n")
        .map { $0.trimmingCharacters(in: .whitespaces) }
        .filter { !$0.isEmpty && !$0.hasPrefix("#") }
        .map { $0.replacingOccurrences(of: #" +"#, with: " ", options: .regularExpression) }
    var stages: [(from: String, instructions: [String], installed: Set<String>)] = []
    for instruction in instructions {
        if instruction.hasPrefix("FROM ") {
            stages.append((String(instruction.dropFirst(5)), [], []))
        } else if !stages.isEmpty {
            stages[stages.count - 1].instructions.append(instruction)
            if let install = instruction.range(of: "apt-get install ") {
                let words = instruction[install.upperBound...].prefix { $0 != "&" }.split(separator: " ")
                stages[stages.count - 1].installed.formUnion(words.filter { !$0.hasPrefix("-") }.map(String.init))
            }
        }
    }
    return stages
}
