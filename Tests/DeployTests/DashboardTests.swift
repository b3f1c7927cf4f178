import Foundation
import Testing

@Suite("Grafana dashboards: importable, one datasource variable, valid PromQL")
struct DashboardTests {
    static func dashboards() throws -> [URL] {
        try Repository.files(in: Repository.url("dashboards"), endingIn: [".json"])
    }

    @Test func thereAreOverviewWorkersAndEventsDashboards() throws {
        let uids = try Self.dashboards().map { try jsonDocument($0)["uid"].string ?? "" }
        #expect(Set(uids) == ["receiptfleet-overview", "receiptfleet-workers", "receiptfleet-events"])
    }

    @Test func everyDashboardIsImportable() throws {
        for url in try Self.dashboards() {
            let problems = dashboardProblems(try jsonDocument(url))
            #expect(problems.isEmpty, "\(url.lastPathComponent): \(problems.joined(separator: "; "))")
        }
    }

    /// Each query goes through promtool as a recording rule, with Grafana's variables filled in,
    /// so a query that Prometheus would refuse fails here.
    @Test func everyQueryIsValidPromQL() async throws {
        var rules: [[String: String]] = []
        for url in try Self.dashboards() {
            for (index, expression) in queries(try jsonDocument(url)).enumerated() {
                let filled = expression
                    .replacingOccurrences(of: "$__rate_interval", with: "5m")
                    .replacingOccurrences(of: "$instance", with: ".*")
                rules.append(["record": "dashboard:\(url.deletingPathExtension().lastPathComponent.replacingOccurrences(of: "-", with: "_")):\(index)",
                              "expr": filled])
            }
        }
        #expect(rules.count > 30)
        // JSON is YAML, so promtool reads this rule file as it is.
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("dashboard-queries-\(UUID()).json")
        try JSONSerialization.data(withJSONObject: ["groups": [["name": "dashboards", "rules": rules]]], options: .withoutEscapingSlashes)
            .write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let result = try await promtool(["check", "rules", file.path])
        #expect(result.succeeded, "\(result)")
    }

    @Test func aDuplicatePanelIdOrAMissingVariableIsCaught() throws {
        let url = try #require(try Self.dashboards().first)
        var dashboard = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
        var panels = try #require(dashboard["panels"] as? [[String: Any]])
        panels[1]["id"] = panels[0]["id"]
        dashboard["panels"] = panels
        #expect(dashboardProblems(YAMLNode(dashboard)).contains { $0.contains("panel id") })
        dashboard["templating"] = ["list": []]
        #expect(dashboardProblems(YAMLNode(dashboard)).contains { $0.contains("datasource") })
    }
}

/// What keeps a dashboard from importing cleanly or from following the project's datasource
/// variable: every query must go to `${datasource}`, a Prometheus datasource the user picks.
func dashboardProblems(_ dashboard: YAMLNode) -> [String] {
    var problems: [String] = []
    for key in ["uid", "title"] where (dashboard[key].string ?? "").isEmpty { problems.append("no \(key)") }
    if dashboard["schemaVersion"].number == nil { problems.append("no schemaVersion") }
    let variables = dashboard["templating"]["list"].array
    if !variables.contains(where: { $0["name"].string == "datasource" && $0["type"].string == "datasource" && $0["query"].string == "prometheus" }) {
        problems.append("no datasource variable of type datasource for prometheus")
    }
    var ids = Set<Double>()
    for panel in panelsWithRows(dashboard) {
        let title = panel["title"].string ?? "?"
        guard let id = panel["id"].number else { problems.append("panel '\(title)' has no id"); continue }
        if !ids.insert(id).inserted { problems.append("panel id \(Int(id)) is used twice ('\(title)')") }
        let grid = panel["gridPos"]
        let (x, w) = (grid["x"].number ?? -1, grid["w"].number ?? -1)
        if grid["h"].number == nil || grid["y"].number == nil || x < 0 || w <= 0 || x + w > 24 {
            problems.append("panel '\(title)' has no valid gridPos")
        }
        guard panel["type"].string != "row" else { continue }
        let targets = panel["targets"].array
        if targets.isEmpty { problems.append("panel '\(title)' has no query") }
        for source in [panel["datasource"]] + targets.map({ $0["datasource"] })
        where source["uid"].string != "${datasource}" || source["type"].string != "prometheus" {
            problems.append("panel '\(title)' does not query ${datasource}")
        }
    }
    return problems
}

/// The panels, including those inside collapsed rows.
func panelsWithRows(_ dashboard: YAMLNode) -> [YAMLNode] {
    dashboard["panels"].array.flatMap { [$0] + $0["panels"].array }
}

/// Every PromQL expression the dashboard's panels run.
func queries(_ dashboard: YAMLNode) -> [String] {
    panelsWithRows(dashboard).flatMap { $0["targets"].array.compactMap { $0["expr"].string } }
}
