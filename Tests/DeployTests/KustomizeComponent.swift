import Foundation

/// A kustomize Component (a folder with `kind: Component`), and the manifests it makes of a base.
/// No kustomize runs where ReceiptFleet is developed, so `render` applies the component the way
/// kustomize does, for the patches it uses: strategic merge patches (maps merged, lists of named
/// items merged by name) and JSON patches (`add`, `replace`), each on the resources its target
/// selects by kind, name and a label selector of one `key=value` or `key in (a,b)`.
struct KustomizeComponent {
    struct Patch {
        let file: String
        let target: YAMLNode
        let document: YAMLNode
    }

    let folder: URL
    let kustomization: YAMLNode
    let resources: [KubernetesManifests.Resource]
    let patches: [Patch]

    init(folder: URL) async throws {
        self.folder = folder
        let kustomization = try await yamlDocuments(folder.appendingPathComponent("kustomization.yaml")).first ?? YAMLNode(nil)
        self.kustomization = kustomization
        let resourceFiles = kustomization["resources"].array.compactMap(\.string)
        let patchEntries = kustomization["patches"].array
        let documents = try await yamlDocuments(of: (resourceFiles + patchEntries.compactMap { $0["path"].string }).map(folder.appendingPathComponent))
        resources = zip(resourceFiles, documents).flatMap { file, nodes in nodes.map { KubernetesManifests.Resource(file: file, node: $0) } }
        patches = zip(patchEntries, documents.dropFirst(resourceFiles.count)).map { entry, nodes in
            Patch(file: entry["path"].string ?? "", target: entry["target"], document: nodes.first ?? YAMLNode(nil))
        }
    }

    /// The component itself: a Component that lists every file in its folder, and only those.
    func problems() throws -> [String] {
        var problems: [String] = []
        if kustomization["kind"].string != "Component" { problems.append("\(folder.lastPathComponent): not a kind: Component") }
        if kustomization["apiVersion"].string != "kustomize.config.k8s.io/v1alpha1" {
            problems.append("\(folder.lastPathComponent): a Component is kustomize.config.k8s.io/v1alpha1")
        }
        let listed = Set(kustomization["resources"].array.compactMap(\.string) + patches.map(\.file))
        let files = Set(try Repository.files(in: folder, endingIn: [".yaml", ".yml"]).map(\.lastPathComponent)).subtracting(["kustomization.yaml"])
        problems += files.subtracting(listed).sorted().map { "\(folder.lastPathComponent)/kustomization.yaml does not list \($0)" }
        problems += listed.subtracting(files).sorted().map { "\(folder.lastPathComponent)/kustomization.yaml lists \($0), which does not exist" }
        return problems
    }

    /// `base` with the component's resources added and its patches applied, and what could not be
    /// applied: a target that selects nothing, a JSON patch path that is not there.
    func render(_ base: KubernetesManifests) -> (manifests: KubernetesManifests, problems: [String]) {
        var resources = base.resources
        var problems: [String] = []
        for patch in patches {
            let selected = resources.indices.filter { selects(patch.target, resources[$0]) }
            if selected.isEmpty { problems.append("\(patch.file): its target selects no resource") }
            for index in selected {
                let resource = resources[index]
                do {
                    let patched = try patch.document.value is [Any]
                        ? patch.document.array.reduce(resource.node.value) { try jsonPatched($0, $1) }
                        : strategicMerged(resource.node.value, withoutName(patch.document.value))
                    resources[index] = KubernetesManifests.Resource(file: resource.file, node: YAMLNode(patched))
                } catch {
                    problems.append("\(patch.file) on \(resource.label): \(error)")
                }
            }
        }
        let manifests = KubernetesManifests(folder: base.folder, resources: resources + self.resources, kustomization: base.kustomization)
        return (manifests, problems)
    }

    private func selects(_ target: YAMLNode, _ resource: KubernetesManifests.Resource) -> Bool {
        if let kind = target["kind"].string, kind != resource.kind { return false }
        if let name = target["name"].string, name != resource.name { return false }
        guard let selector = target["labelSelector"].string else { return true }
        let labels = resource.node["metadata"]["labels"].strings
        if let set = selector.wholeMatch(of: /\s*(\S+)\s+in\s+\(([^)]*)\)\s*/) {
            let values = set.output.2.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            return labels[String(set.output.1)].map(values.contains) ?? false
        }
        if let equality = selector.wholeMatch(of: /\s*([^=\s]+)\s*=\s*(\S+)\s*/) {
            return labels[String(equality.output.1)] == String(equality.output.2)
        }
        return false
    }
}

/// A patch's own name does not rename what its target selected.
private func withoutName(_ patch: Any?) -> Any? {
    guard var document = patch as? [String: Any], var metadata = document["metadata"] as? [String: Any] else { return patch }
    metadata["name"] = nil
    document["metadata"] = metadata
    return document
}

/// A strategic merge as kustomize does it for the fields patched here: maps merge, lists of named
/// items (containers, volumes, env) merge by name, anything else is replaced.
private func strategicMerged(_ base: Any?, _ patch: Any?) -> Any? {
    if let base = base as? [String: Any], let patch = patch as? [String: Any] {
        return base.merging(patch) { old, new in strategicMerged(old, new) as Any }
    }
    if let base = base as? [[String: Any]], let patch = patch as? [[String: Any]],
       (base + patch).allSatisfy({ $0["name"] is String }) {
        var merged = base
        for item in patch {
            if let index = merged.firstIndex(where: { $0["name"] as? String == item["name"] as? String }) {
                merged[index] = strategicMerged(merged[index], item) as? [String: Any] ?? item
            } else {
                merged.append(item)
            }
        }
        return merged
    }
    return patch
}

struct PatchFailure: Error, CustomStringConvertible {
    let description: String
}

/// One JSON patch operation (RFC 6902): `add` and `replace`, which are what the component uses.
private func jsonPatched(_ document: Any?, _ operation: YAMLNode) throws -> Any? {
    guard let op = operation["op"].string, ["add", "replace"].contains(op), let path = operation["path"].string else {
        throw PatchFailure(description: "an operation that is not add or replace with a path")
    }
    let tokens = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        .map { $0.replacingOccurrences(of: "~1", with: "/").replacingOccurrences(of: "~0", with: "~") }
    return try set(operation["value"].value, at: ArraySlice(tokens), in: document, replacing: op == "replace", path: path)
}

private func set(_ value: Any?, at tokens: ArraySlice<String>, in node: Any?, replacing: Bool, path: String) throws -> Any? {
    guard let token = tokens.first else { return value }
    let rest = tokens.dropFirst()
    if var map = node as? [String: Any] {
        if map[token] == nil && (!rest.isEmpty || replacing) { throw PatchFailure(description: "\(path): no \(token)") }
        map[token] = try set(value, at: rest, in: map[token], replacing: replacing, path: path)
        return map
    }
    // Into a list only a step or a replacement: inserting (add at an index, or "-") is not used here.
    if var list = node as? [Any], let index = Int(token), list.indices.contains(index), !rest.isEmpty || replacing {
        list[index] = try set(value, at: rest, in: list[index], replacing: replacing, path: path) as Any
        return list
    }
    throw PatchFailure(description: "\(path): no \(token)")
}
