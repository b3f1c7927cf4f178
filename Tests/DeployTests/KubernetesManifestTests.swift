import Foundation
import JobQueue
import Testing

@Suite("Kubernetes manifests: schemas, required fields, references")
struct KubernetesManifestTests {
    static let folder = Repository.url("deploy/kubernetes")
    /// Custom resources, which kubernetes-validate has no schema for: KubernetesManifests checks them.
    static let customKinds = ["ScaledObject", "ServiceMonitor", "Kustomization"]

    /// Against the Kubernetes API's own schemas, strictly (an unknown or misspelt field fails).
    @Test func builtInKindsMatchTheKubernetesSchemas() async throws {
        let files = try Repository.files(in: Self.folder, endingIn: [".yaml"]).map(\.path)
        let result = try await python(["-m", "kubernetes_validate", "--strict", "--quiet"] + files, needs: "kubernetes-validate")
        #expect(result.succeeded, "\(result)")
        for line in result.output.split(separator: "\n") {
            let expected = line.contains("Couldn't find schema") && Self.customKinds.contains { line.contains("kind \($0) ") }
            #expect(expected, "kubernetes-validate: \(line)")
        }
    }

    @Test func theManifestsHaveEverythingTheyNeed() async throws {
        let problems = try await KubernetesManifests(folder: Self.folder).problems()
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
    }

    @Test func workersDrainBeforeTheyAreKilledAndAreReadyOnReadyz() async throws {
        let manifests = try await KubernetesManifests(folder: Self.folder)
        let worker = try #require(manifests.resources("Deployment").first { $0.name == "receiptfleet-worker" })
        let pod = worker.node["spec"]["template"]["spec"]
        let grace = try #require(pod["terminationGracePeriodSeconds"].number)
        #expect(grace > SystemdUnitTests.drainGrace + 5)
        let container = pod["containers"].array[0]
        #expect(container["readinessProbe"]["httpGet"]["path"].string == "/readyz")
        #expect(container["livenessProbe"]["httpGet"]["path"].string == "/healthz")
        #expect(container["args"].array.first?.string == "worker")
    }

    /// KEDA reads the lag of the consumer group the workers really use, on the streams they read.
    @Test func kedaScalesOnTheWorkersConsumerGroupLag() async throws {
        let manifests = try await KubernetesManifests(folder: Self.folder)
        let scaler = try #require(manifests.resources("ScaledObject").first)
        let triggers = scaler.node["spec"]["triggers"].array
        let keys = try QueueKeys(prefix: try Self.configuredKeyPrefix(manifests))
        #expect(Set(triggers.compactMap { $0["metadata"]["stream"].string }) == [keys.ready, keys.readyHigh])
        for trigger in triggers {
            #expect(trigger["type"].string == "redis-streams")
            #expect(trigger["metadata"]["consumerGroup"].string == QueueKeys.group)
            #expect(trigger["metadata"]["lagCount"].exists, "scale on the lag, not on pending entries")
        }
        // Workers also promote delayed jobs: scaling to zero would strand the retries.
        #expect((scaler.node["spec"]["minReplicaCount"].number ?? 0) >= 1)
    }

    /// The scheduler nightly, retention and the notifications' recovery after it, each one at a time.
    @Test(arguments: [("schedule", "0 2 * * *"), ("prune", "30 3 * * *"), ("notifications", "15 */6 * * *")])
    func theDailyJobsRunOneAtATime(command: String, schedule: String) async throws {
        let manifests = try await KubernetesManifests(folder: Self.folder)
        let cron = try #require(manifests.resources("CronJob").first { $0.node["metadata"]["name"].string == "receiptfleet-\(command)" })
        #expect(cron.node["spec"]["schedule"].string == schedule)
        #expect(cron.node["spec"]["concurrencyPolicy"].string == "Forbid")
        #expect((cron.node["spec"]["startingDeadlineSeconds"].number ?? 0) > 0)
        #expect(cron.podTemplate?["spec"]["containers"].array.first?["args"].array.first?.string == command)
    }

    /// theManifestsHaveEverythingTheyNeed would notice a malformed manifest: a container without
    /// an image (which the schema allows), or a Service that selects nothing.
    @Test func aMalformedManifestIsCaught() async throws {
        let folder = try Repository.copy("deploy/kubernetes")
        let worker = folder.appendingPathComponent("worker-deployment.yaml")
        try String(contentsOf: worker, encoding: .utf8).replacingOccurrences(of: "          image: receiptfleet\n", with: "")
            .write(to: worker, atomically: true, encoding: .utf8)
        let service = folder.appendingPathComponent("api-service.yaml")
        try String(contentsOf: service, encoding: .utf8).replacingOccurrences(of: "component: api\n  ports", with: "component: apii\n  ports")
            .write(to: service, atomically: true, encoding: .utf8)
        let problems = try await KubernetesManifests(folder: folder).problems()
        #expect(problems.contains { $0.contains("receiptfleet-worker container worker has no image") }, "\(problems)")
        #expect(problems.contains { $0.contains("Service receiptfleet-api selects no pods") }, "\(problems)")
    }

    /// The key prefix in the ConfigMap's receiptfleet.json.
    static func configuredKeyPrefix(_ manifests: KubernetesManifests) throws -> String {
        let config = try #require(manifests.resources("ConfigMap").first?.node["data"]["receiptfleet.json"].string)
        let settings = try #require(try JSONSerialization.jsonObject(with: Data(config.utf8)) as? [String: Any])
        return try #require(settings["key-prefix"] as? String)
    }
}
