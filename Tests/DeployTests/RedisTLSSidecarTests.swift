import Foundation
import RedisClient
import TestSupport
import Testing

/// The TLS sidecar to a managed Redis (hiredis 0.14 has no TLS), as Compose and Kubernetes ship it:
/// stunnel4 from the receiptfleet image, in front of every process that talks to Redis.
@Suite("TLS sidecar to Redis: Compose override, Kubernetes component, stunnel4 configs")
struct RedisTLSSidecarTests {
    static let composeConfig = Repository.url("deploy/compose/stunnel-redis.conf")
    static let override = Repository.url("deploy/compose/compose.redis-tls.yaml")
    static let component = Repository.url("deploy/kubernetes/redis-tls")

    // MARK: The stunnel4 configurations

    /// Compose's file and Kubernetes' ConfigMap say the same but where the sidecar listens, and what
    /// they say verifies the server: its chain, and its name as the one `connect` dials.
    @Test func bothStunnelConfigsVerifyTheServerAlike() async throws {
        let compose = StunnelConfig(try String(contentsOf: Self.composeConfig, encoding: .utf8))
        let kubernetes = StunnelConfig(try await Self.kubernetesConfigText())
        var composeRest = compose.settings, kubernetesRest = kubernetes.settings
        composeRest["redis.accept"] = nil
        kubernetesRest["redis.accept"] = nil
        #expect(composeRest == kubernetesRest)
        #expect(kubernetes.settings["redis.accept"] == "127.0.0.1:6380", "in a pod, only on loopback")
        for config in [compose, kubernetes] {
            #expect(config.settings["redis.client"] == "yes")
            #expect(config.settings["redis.verifyChain"] == "yes")
            #expect(!(config.settings["redis.CAfile"] ?? "").isEmpty)
            let connectHost = config.settings["redis.connect"]?.split(separator: ":").first.map(String.init)
            #expect(config.settings["redis.checkHost"] != nil && config.settings["redis.checkHost"] == connectHost)
            // Nothing written (read-only root file system) and the runtime sees the process itself.
            #expect(config.settings["foreground"] == "yes" && config.settings["pid"] == "" && config.settings["syslog"] == "no")
        }
    }

    /// The shipped configs, run by the real stunnel4 against the TLS-only Redis of scripts/services:
    /// with that server's endpoint, name and CA they carry Redis; with the name or the CA left as
    /// shipped they refuse the server, so verifyChain and checkHost do hold.
    @Test(.enabled(if: ProcessInfo.processInfo.environment["RECEIPTFLEET_TEST_CA"] != nil
                   && ProcessInfo.processInfo.environment["RECEIPTFLEET_TLS_REDIS_PORT"] != nil,
                   "needs the TLS servers of scripts/services (scripts/test starts them)"))
    func theShippedConfigsCarryRedisOnlyToAVerifiedServer() async throws {
        let environment = ProcessInfo.processInfo.environment
        let server = ["redis.connect": "127.0.0.1:\(environment["RECEIPTFLEET_TLS_REDIS_PORT"]!)",
                      "redis.CAfile": environment["RECEIPTFLEET_TEST_CA"]!, "redis.checkHost": "localhost"]
        for text in [try String(contentsOf: Self.composeConfig, encoding: .utf8), try await Self.kubernetesConfigText()] {
            #expect(try await Self.ping(through: text, replacing: server) == "PONG")
            #expect(try await Self.ping(through: text, replacing: server.filter { $0.key != "redis.checkHost" }) != "PONG")
            #expect(try await Self.ping(through: text, replacing: server.filter { $0.key != "redis.CAfile" }) != "PONG")
        }
    }

    // MARK: Compose

    /// The override merged onto compose.yaml: the sidecar takes the local Redis's name, runs
    /// stunnel4 on the mounted config, and every process that had a Redis URL now uses the sidecar.
    @Test func composeSendsEveryFleetProcessThroughTheSidecar() async throws {
        let base = try await yamlDocuments(ComposeTests.compose)[0]
        let override = try await yamlDocuments(Self.override)[0]
        let merged = YAMLNode(composeMerged(base.value, override.value))
        let folder = Self.override.deletingLastPathComponent()
        let problems = composeProblems(merged, folder: folder)
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")

        let sidecar = merged["services"]["redis"]
        let command = (sidecar["entrypoint"].array + sidecar["command"].array).compactMap(\.string)
        #expect(command.first == "stunnel4")
        let mounts = sidecar["volumes"].array.compactMap(\.string).map { $0.split(separator: ":").map(String.init) }
        let mounted = try #require(mounts.first { $0.count > 1 && $0[1] == command.last }, "the config stunnel4 reads is not mounted")
        #expect(folder.appendingPathComponent(mounted[0]).standardizedFileURL == Self.composeConfig.standardizedFileURL)
        let port = try #require(StunnelConfig(try String(contentsOf: Self.composeConfig, encoding: .utf8)).settings["redis.accept"])

        let usingRedis = base["services"].dictionary.filter { $0.value["environment"]["RECEIPTFLEET_REDIS_URL"].exists }
        #expect(usingRedis.count >= 4, "\(usingRedis.keys.sorted())")
        for name in usingRedis.keys.sorted() {
            // As Compose interpolates it, with REDIS_PASSWORD set.
            let value = (merged["services"][name]["environment"]["RECEIPTFLEET_REDIS_URL"].string ?? "").replacing(/\$\{[^}]*\}/, with: "secret")
            let url = URLComponents(string: value)
            #expect(url?.host == "redis" && url?.port.map(String.init) == port, "\(name): \(url?.string ?? "no URL")")
        }
    }

    /// Both sidecars run a program of a package the image's runtime stage installs.
    @Test func theImageHasTheSidecarsProgram() async throws {
        let composeSidecar = try await yamlDocuments(Self.override)[0]["services"]["redis"]["entrypoint"].array.first?.string
        let (rendered, _) = try await Self.rendered()
        let podSidecars = rendered.resources.compactMap { $0.podTemplate?["spec"]["initContainers"].array.first?["command"].array.first?.string }
        let programs = Set([composeSidecar].compactMap { $0 } + podSidecars)
        #expect(!programs.isEmpty)
        let runtimeInstalls = dockerStages(try Repository.text("Dockerfile")).last?.installed ?? []
        for program in programs {
            let owner = try await run("dpkg-query", ["-S", "/usr/bin/\(program)"], from: "dpkg")
            let package = owner.output.split(separator: ":").first.map(String.init) ?? ""
            #expect(owner.succeeded && runtimeInstalls.contains(package), "\(program) (\(owner.output)) is not installed by the runtime stage")
        }
    }

    // MARK: Kubernetes

    @Test func theComponentIsAComponentThatListsItsFiles() async throws {
        let problems = try await KustomizeComponent(folder: Self.component).problems()
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
    }

    /// The manifests as `kubectl apply -k` makes them with the component enabled: every check of
    /// the plain manifests still holds (the sidecar is a container like the others: non-root,
    /// read-only, with resources, mounting what the pod has), and the Kubernetes schemas accept it.
    @Test func theManifestsWithTheComponentPassEveryCheck() async throws {
        let (rendered, patchProblems) = try await Self.rendered()
        #expect(patchProblems.isEmpty, "\(patchProblems.joined(separator: "\n"))")
        let problems = rendered.resourceProblems()
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")

        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(uniqueName("rendered"))
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        var files: [String] = []
        for (index, resource) in rendered.resources.enumerated() where !KubernetesManifestTests.customKinds.contains(resource.kind) {
            // JSON is YAML.
            let file = folder.appendingPathComponent("\(index)-\(resource.file)")
            try JSONSerialization.data(withJSONObject: resource.node.value as Any).write(to: file)
            files.append(file.path)
        }
        let result = try await python(["-m", "kubernetes_validate", "--strict", "--quiet"] + files, needs: "kubernetes-validate")
        #expect(result.succeeded && result.output.isEmpty, "\(result)")
    }

    /// Every pod that talks to Redis (all but the migrate Job's and the prune CronJob's) has the native sidecar: an init
    /// container that keeps running (so the scheduler's Job still completes), from the fleet's image,
    /// running stunnel4 on the config of the component's ConfigMap.
    @Test func everyPodThatTalksToRedisHasTheSidecar() async throws {
        let (rendered, _) = try await Self.rendered()
        let configMap = try #require(rendered.resources("ConfigMap").first { $0.file == "stunnel-configmap.yaml" })
        let workloads = rendered.resources.filter { $0.podTemplate != nil }
        #expect(workloads.count >= 5)
        for workload in workloads {
            let pod = workload.podTemplate!["spec"]
            let main = pod["containers"].array[0]
            let sidecars = pod["initContainers"].array
            if let command = main["args"].array.first?.string, ["migrate", "prune"].contains(command) {
                #expect(sidecars.isEmpty, "\(workload.label): \(command) talks to PostgreSQL only")
                continue
            }
            let sidecar = try #require(sidecars.first, "\(workload.label) has no sidecar")
            #expect(sidecar["restartPolicy"].string == "Always", "\(workload.label): not a native sidecar")
            #expect(sidecar["image"].string == main["image"].string)
            let command = sidecar["command"].array.compactMap(\.string)
            #expect(command.count == 2 && command.first == "stunnel4", "\(command)")
            let mount = try #require(sidecar["volumeMounts"].array.first { command.last?.hasPrefix(($0["mountPath"].string ?? "?") + "/") == true })
            let volume = pod["volumes"].array.first { $0["name"].string == mount["name"].string }
            #expect(volume?["configMap"]["name"].string == configMap.name, "\(workload.label)")
            let key = String(command.last!.dropFirst((mount["mountPath"].string ?? "").count + 1))
            #expect(configMap.node["data"][key].string != nil, "\(workload.label): the ConfigMap has no \(key)")
        }
    }

    /// The scheduler's sidecar is the Deployments' one (two patches, because a CronJob nests its
    /// pod deeper), and KEDA, which has no sidecar, dials the Redis the sidecar dials, over TLS.
    @Test func theSidecarsAgreeAndKEDADialsTheSameRedis() async throws {
        let (rendered, _) = try await Self.rendered()
        let sidecars = try rendered.resources.compactMap { $0.podTemplate?["spec"]["initContainers"].array.first?.value }
            .map { try JSONSerialization.data(withJSONObject: $0, options: .sortedKeys) }
        #expect(sidecars.count >= 4 && Set(sidecars).count == 1, "the sidecars differ")
        let connect = StunnelConfig(try await Self.kubernetesConfigText()).settings["redis.connect"]
        let triggers = try #require(rendered.resources("ScaledObject").first).node["spec"]["triggers"].array
        #expect(!triggers.isEmpty)
        for trigger in triggers {
            #expect(trigger["metadata"]["address"].string == connect)
            #expect(trigger["metadata"]["enableTLS"].string == "true")
        }
    }

    /// The fleet is told (by the rediss:// error, docs/operations.md and secret.example.yaml) to
    /// point redis-url at 127.0.0.1:6380: that is where the pods' sidecar listens.
    @Test func theSidecarListensWhereTheRedissErrorSendsTheFleet() async throws {
        var advice = ""
        do { _ = try RedisConfiguration(url: "rediss://:secret@redis.example.internal:6380/0") } catch { advice = "\(error)" }
        let url = try #require(advice.firstMatch(of: /redis:\/\/:PASSWORD@([^\/\s]+)\//), "\(advice)")
        let accept = StunnelConfig(try await Self.kubernetesConfigText()).settings["redis.accept"]
        #expect(accept == String(url.output.1))
        #expect(try Repository.text("deploy/kubernetes/secret.example.yaml").contains("@\(accept ?? "?")/0"))
    }

    /// What the error, the image and the deployment files cite of docs/operations.md is there.
    @Test func theTLSFilesCiteSectionsThatExist() throws {
        let headings = Set(try Repository.text("docs/operations.md").split(separator: "\n").filter { $0.hasPrefix("#") }
            .map { $0.drop { $0 == "#" }.trimmingCharacters(in: .whitespaces) })
        let files = ["Sources/RedisClient/RedisConfiguration+URL.swift", "Dockerfile", "deploy/compose/stunnel-redis.conf",
                     "deploy/compose/compose.redis-tls.yaml", "deploy/kubernetes/kustomization.yaml", "deploy/kubernetes/redis-tls/kustomization.yaml"]
        for file in files {
            let cited = try Repository.text(file).replacingOccurrences(of: "\n# ", with: " ").replacingOccurrences(of: "\\\"", with: "\"")
                .matches(of: /docs\/operations\.md,\s+"([^"]+)"/).map { String($0.output.1) }
            #expect(!cited.isEmpty, "\(file) cites no section")
            for section in cited { #expect(headings.contains(section), "\(file) cites \"\(section)\", which docs/operations.md has not") }
        }
    }

    /// The checks above would notice a patch that selects nothing and a sidecar that could write
    /// to its root file system.
    @Test func aBrokenComponentIsCaught() async throws {
        let folder = try Repository.copy("deploy/kubernetes")
        let component = folder.appendingPathComponent("redis-tls")
        for (file, from, to) in [("kustomization.yaml", "in (worker,relay,api)", "in (workers,relays)"),
                                 ("sidecar-cronjob.yaml", "readOnlyRootFilesystem: true", "readOnlyRootFilesystem: false")] {
            let url = component.appendingPathComponent(file)
            try String(contentsOf: url, encoding: .utf8).replacingOccurrences(of: from, with: to).write(to: url, atomically: true, encoding: .utf8)
        }
        let (rendered, patchProblems) = try await KustomizeComponent(folder: component).render(try await KubernetesManifests(folder: folder))
        #expect(patchProblems.contains { $0.contains("sidecar-deployments.yaml: its target selects no resource") }, "\(patchProblems)")
        #expect(rendered.resourceProblems().contains { $0.contains("receiptfleet-schedule container redis-tls: root file system not read-only") })
    }

    // MARK: Helpers

    static func rendered() async throws -> (manifests: KubernetesManifests, problems: [String]) {
        try await KustomizeComponent(folder: component).render(try await KubernetesManifests(folder: KubernetesManifestTests.folder))
    }

    static func kubernetesConfigText() async throws -> String {
        let component = try await KustomizeComponent(folder: component)
        return try #require(component.resources.first { $0.kind == "ConfigMap" }?.node["data"]["redis.conf"].string)
    }

    /// Runs stunnel4 on `config` with `replacing`'s settings (and a Unix socket to accept on, so
    /// that no port is taken), and sends PING through it: Redis's answer, or what went wrong.
    static func ping(through config: String, replacing: [String: String]) async throws -> String {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(uniqueName("stunnel"))
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let socket = folder.appendingPathComponent("redis.sock").path
        let file = folder.appendingPathComponent("redis.conf")
        try StunnelConfig.replacing(replacing.merging(["redis.accept": socket]) { $1 }, in: config).write(to: file, atomically: true, encoding: .utf8)
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/stunnel4") else { throw MissingTool(tool: "stunnel4", package: "stunnel4") }
        let stunnel = Process()
        stunnel.executableURL = URL(fileURLWithPath: "/usr/bin/stunnel4")
        stunnel.arguments = [file.path]
        stunnel.standardOutput = FileHandle.nullDevice
        stunnel.standardError = FileHandle.nullDevice
        try stunnel.run()
        // SIGKILL: the child inherits the test runner's blocked signals, SIGTERM among them.
        defer { kill(stunnel.processIdentifier, SIGKILL); stunnel.waitUntilExit() }
        try await eventually(within: .seconds(5), every: .milliseconds(50)) { FileManager.default.fileExists(atPath: socket) }
        // A refusal must come from the TLS handshake, not from a stunnel4 that never listened.
        guard FileManager.default.fileExists(atPath: socket) else { throw StunnelDidNotStart(config: file.path) }
        let password = URLComponents(string: ProcessInfo.processInfo.environment["RECEIPTFLEET_TLS_REDIS_URL"] ?? "")?.password ?? "receiptfleet-dev"
        let result = try await run("redis-cli", ["-s", socket, "--no-auth-warning", "-a", password, "ping"], from: "redis-tools (scripts/bootstrap)")
        return result.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

struct StunnelDidNotStart: Error, CustomStringConvertible {
    let config: String
    var description: String { "stunnel4 did not listen with \(config)" }
}

/// A stunnel configuration's settings: the global ones by name, a service's as `service.name`.
struct StunnelConfig {
    let settings: [String: String]

    init(_ text: String) {
        var settings: [String: String] = [:]
        var section = ""
        for line in text.split(separator: "\n").map({ $0.trimmingCharacters(in: .whitespaces) }) where !line.isEmpty && !line.hasPrefix("#") && !line.hasPrefix(";") {
            if line.hasPrefix("["), line.hasSuffix("]") {
                section = line.dropFirst().dropLast() + "."
            } else if let equals = line.firstIndex(of: "=") {
                settings[section + line[..<equals].trimmingCharacters(in: .whitespaces)] = line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces)
            }
        }
        self.settings = settings
    }

    /// `text` with the named service settings (`service.name`) given other values.
    static func replacing(_ values: [String: String], in text: String) -> String {
        var section = ""
        return text.split(separator: "\n", omittingEmptySubsequences: false).map { line in
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.hasPrefix("["), trimmed.hasSuffix("]") { section = trimmed.dropFirst().dropLast() + "." }
            guard let equals = trimmed.firstIndex(of: "="), !trimmed.hasPrefix("#"),
                  let value = values[section + trimmed[..<equals].trimmingCharacters(in: .whitespaces)] else { return String(line) }
            return "\(trimmed[..<equals])= \(value)"
        }.joined(separator: "\n")
    }
}

/// Compose's merge of an override onto a file, for the fields the override uses: maps merge,
/// anything else (a command, a healthcheck's test) is replaced. (Compose joins some lists, such as
/// volumes, which the checks here do not need.)
func composeMerged(_ base: Any?, _ override: Any?) -> Any? {
    guard let base = base as? [String: Any], let override = override as? [String: Any] else { return override ?? base }
    return base.merging(override) { composeMerged($0, $1) as Any }
}
