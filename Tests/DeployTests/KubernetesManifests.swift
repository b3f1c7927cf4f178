import Foundation

/// The Kubernetes manifests of one folder, and what is wrong with them beyond their schemas: the
/// fields the schemas leave optional but the fleet needs, and the names one manifest gives another.
struct KubernetesManifests {
    struct Resource {
        let file: String
        let node: YAMLNode
        var kind: String { node["kind"].string ?? "" }
        var name: String { node["metadata"]["name"].string ?? "" }
        var label: String { "\(file): \(kind) \(name)" }

        /// The pod template of a workload (Deployment, Job, the Job of a CronJob).
        var podTemplate: YAMLNode? {
            switch kind {
            case "Deployment", "Job": node["spec"]["template"]
            case "CronJob": node["spec"]["jobTemplate"]["spec"]["template"]
            default: nil
            }
        }
    }

    /// Files that are not applied with the rest, on purpose: the Secrets are created by hand, the CPU
    /// autoscaler replaces the KEDA one. (kustomization.yaml says so too.)
    static let notInKustomization: Set<String> = ["secret.example.yaml", "worker-hpa.yaml"]

    let folder: URL
    let resources: [Resource]
    let kustomization: YAMLNode

    /// The manifests directly in `folder` (a kustomize component in a subfolder is read by
    /// `KustomizeComponent`).
    init(folder: URL) async throws {
        var resources: [Resource] = []
        var kustomization = YAMLNode(nil)
        let files = try Repository.files(in: folder, endingIn: [".yaml", ".yml"])
        for (url, documents) in zip(files, try await yamlDocuments(of: files)) {
            for node in documents {
                if node["kind"].string == "Kustomization" {
                    kustomization = node
                } else {
                    resources.append(Resource(file: url.lastPathComponent, node: node))
                }
            }
        }
        self.init(folder: folder, resources: resources, kustomization: kustomization)
    }

    init(folder: URL, resources: [Resource], kustomization: YAMLNode) {
        self.folder = folder
        self.resources = resources
        self.kustomization = kustomization
    }

    func resources(_ kind: String) -> [Resource] { resources.filter { $0.kind == kind } }

    func problems() -> [String] { resourceProblems() + kustomizationProblems() }

    /// What is wrong with the resources themselves and the names they give each other.
    func resourceProblems() -> [String] {
        var problems: [String] = []
        for resource in resources {
            if resource.node["apiVersion"].string == nil { problems.append("\(resource.file): a document without apiVersion") }
            if resource.kind.isEmpty { problems.append("\(resource.file): a document without kind") }
            if resource.name.isEmpty { problems.append("\(resource.file): a \(resource.kind) without metadata.name") }
            if let template = resource.podTemplate { problems += podProblems(template, of: resource) }
        }
        return problems + referenceProblems()
    }

    /// Every container, sidecars (init containers) too: an image, non-root, read-only, no privilege
    /// escalation, resources, and probes on ports it declares.
    private func podProblems(_ template: YAMLNode, of resource: Resource) -> [String] {
        var problems: [String] = []
        let pod = template["spec"]
        if pod["securityContext"]["runAsNonRoot"].bool != true { problems.append("\(resource.label): pod not runAsNonRoot") }
        let containers = pod["containers"].array
        if containers.isEmpty { problems.append("\(resource.label): no containers") }
        for container in containers + pod["initContainers"].array {
            let name = "\(resource.label) container \(container["name"].string ?? "?")"
            if (container["image"].string ?? "").isEmpty { problems.append("\(name) has no image") }
            if container["securityContext"]["readOnlyRootFilesystem"].bool != true { problems.append("\(name): root file system not read-only") }
            if container["securityContext"]["allowPrivilegeEscalation"].bool != false { problems.append("\(name): privilege escalation allowed") }
            if !container["resources"]["requests"].exists || !container["resources"]["limits"]["memory"].exists {
                problems.append("\(name): no resource requests or memory limit")
            }
            let ports = Set(container["ports"].array.compactMap { $0["name"].string })
            for probe in ["readinessProbe", "livenessProbe"] where container[probe].exists {
                if let port = container[probe]["httpGet"]["port"].string, !ports.contains(port) {
                    problems.append("\(name): \(probe) on port '\(port)', which the container does not declare")
                }
            }
        }
        return problems
    }

    /// ConfigMaps, Secrets and volumes the pods use exist; Services, the ServiceMonitor and the autoscalers
    /// select or target something that exists.
    private func referenceProblems() -> [String] {
        var problems: [String] = []
        let configMaps = Set(resources("ConfigMap").map(\.name))
        let secrets = Set(resources("Secret").map(\.name))
        let deployments = Set(resources("Deployment").map(\.name))
        let workloads = resources.filter { $0.podTemplate != nil }
        for workload in workloads {
            let pod = workload.podTemplate!["spec"]
            for volume in pod["volumes"].array {
                if let name = volume["configMap"]["name"].string, !configMaps.contains(name) { problems.append("\(workload.label): no ConfigMap \(name)") }
                if let name = volume["secret"]["secretName"].string, !secrets.contains(name) { problems.append("\(workload.label): no Secret \(name)") }
            }
            for mount in (pod["containers"].array + pod["initContainers"].array).flatMap({ $0["volumeMounts"].array }) {
                let name = mount["name"].string ?? ""
                if !pod["volumes"].array.contains(where: { $0["name"].string == name }) { problems.append("\(workload.label): mounts volume \(name), which the pod does not have") }
            }
            for source in pod["containers"].array.flatMap({ $0["envFrom"].array }) {
                if let name = source["secretRef"]["name"].string, !secrets.contains(name) { problems.append("\(workload.label): no Secret \(name)") }
            }
        }
        for service in resources("Service") {
            let selector = service.node["spec"]["selector"].strings
            let selected = workloads.filter { matches(selector, $0.podTemplate!["metadata"]["labels"].strings) }
            if selected.isEmpty { problems.append("\(service.label) selects no pods") }
            let ports = Set(selected.flatMap { $0.podTemplate!["spec"]["containers"].array.flatMap { $0["ports"].array.compactMap { $0["name"].string } } })
            for port in service.node["spec"]["ports"].array {
                if let target = port["targetPort"].string, !ports.contains(target) { problems.append("\(service.label): targetPort \(target) is on no selected pod") }
            }
        }
        for monitor in resources("ServiceMonitor") {
            let selector = monitor.node["spec"]["selector"]["matchLabels"].strings
            let services = resources("Service").filter { matches(selector, $0.node["metadata"]["labels"].strings) }
            if services.isEmpty { problems.append("\(monitor.label) selects no Service") }
            let ports = Set(services.flatMap { $0.node["spec"]["ports"].array.compactMap { $0["name"].string } })
            for endpoint in monitor.node["spec"]["endpoints"].array where !ports.contains(endpoint["port"].string ?? "") {
                problems.append("\(monitor.label): endpoint port \(endpoint["port"].string ?? "?") is on no selected Service")
            }
        }
        for scaler in resources("ScaledObject") + resources("HorizontalPodAutoscaler") {
            let target = scaler.node["spec"]["scaleTargetRef"]["name"].string ?? ""
            if !deployments.contains(target) { problems.append("\(scaler.label) scales '\(target)', which is no Deployment here") }
        }
        for scaler in resources("ScaledObject") {
            let triggers = scaler.node["spec"]["triggers"].array
            if triggers.isEmpty { problems.append("\(scaler.label) has no triggers") }
            for trigger in triggers where trigger["type"].string == nil || trigger["metadata"].dictionary.isEmpty {
                problems.append("\(scaler.label): a trigger without type or metadata")
            }
        }
        return problems
    }

    /// kustomization.yaml lists files that exist, and every manifest but the deliberate exceptions.
    private func kustomizationProblems() -> [String] {
        guard kustomization.exists else { return ["no kustomization.yaml"] }
        let listed = kustomization["resources"].array.compactMap(\.string)
        var problems = listed.filter { !FileManager.default.fileExists(atPath: folder.appendingPathComponent($0).path) }
            .map { "kustomization.yaml lists \($0), which does not exist" }
        let files = Set(resources.map(\.file))
        for file in files.subtracting(listed).subtracting(Self.notInKustomization).sorted() {
            problems.append("kustomization.yaml does not list \(file)")
        }
        let scalers = Set(resources.filter { ["ScaledObject", "HorizontalPodAutoscaler"].contains($0.kind) }.map(\.file))
        if scalers.intersection(listed).count > 1 { problems.append("kustomization.yaml lists two autoscalers for the workers") }
        return problems
    }
}

/// Whether a label selector (every key with its value) selects these labels.
private func matches(_ selector: [String: String], _ labels: [String: String]) -> Bool {
    !selector.isEmpty && selector.allSatisfy { labels[$0.key] == $0.value }
}
