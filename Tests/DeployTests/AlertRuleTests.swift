import Foundation
import Testing

@Suite("Alert rules: promtool check and unit tests, labels, runbooks")
struct AlertRuleTests {
    static let rules = "deploy/prometheus/receiptfleet-rules.yml"
    static let unitTests = "deploy/prometheus/receiptfleet-rules.test.yml"

    @Test func promtoolAcceptsTheRules() async throws {
        let result = try await promtool(["check", "rules", Repository.url(Self.rules).path])
        #expect(result.succeeded, "\(result)")
    }

    @Test func theUnitTestsPass() async throws {
        let result = try await promtool(["test", "rules", Repository.url(Self.unitTests).path])
        #expect(result.succeeded, "\(result)")
    }

    @Test func prometheusConfigurationLoadsTheRules() async throws {
        let result = try await promtool(["check", "config", Repository.url("deploy/prometheus/prometheus.yml").path])
        #expect(result.succeeded, "\(result)")
        #expect(result.output.contains("receiptfleet-rules.yml"), "prometheus.yml must load the alert rules")
    }

    @Test func everyAlertIsShownToFireAndToStayQuiet() async throws {
        let alerts = try await Self.alertNames()
        let tests = try await yamlDocuments(Repository.url(Self.unitTests))[0]["tests"].array
            .flatMap { $0["alert_rule_test"].array }
        for alert in alerts {
            let cases = tests.filter { $0["alertname"].string == alert }
            #expect(cases.contains { !$0["exp_alerts"].array.isEmpty }, "no unit test shows \(alert) firing")
            #expect(cases.contains { $0["exp_alerts"].array.isEmpty }, "no unit test shows \(alert) staying quiet")
        }
        #expect(alerts.count >= 9)
    }

    @Test func everyAlertHasASeveritySummaryDescriptionAndRunbook() async throws {
        let headings = Set(try Repository.text("docs/operations.md").split(separator: "\n")
            .filter { $0.hasPrefix("#") }
            .map { anchor($0.drop { $0 == "#" }.trimmingCharacters(in: .whitespaces)) })
        for rule in try await Self.alertRules() {
            let name = rule["alert"].string ?? "?"
            #expect(["warning", "critical"].contains(rule["labels"]["severity"].string ?? ""), "\(name): severity")
            #expect(!(rule["annotations"]["summary"].string ?? "").isEmpty, "\(name): summary")
            #expect(!(rule["annotations"]["description"].string ?? "").isEmpty, "\(name): description")
            let runbook = rule["annotations"]["runbook_url"].string ?? ""
            #expect(runbook == "docs/operations.md#" + anchor(name), "\(name): runbook_url is '\(runbook)'")
            #expect(headings.contains(anchor(name)), "docs/operations.md has no heading '\(name)' for the runbook")
        }
    }

    @Test func haltedIsCritical() async throws {
        let halted = try await Self.alertRules().first { $0["alert"].string == "ReceiptFleetHalted" }
        #expect(halted?["labels"]["severity"].string == "critical")
    }

    /// The checks above would notice a broken rule: a rule that never fires fails its unit test,
    /// and a rule that does not parse fails promtool's check.
    @Test func aBrokenRuleFailsTheChecks() async throws {
        let folder = try Repository.copy("deploy/prometheus")
        let rules = folder.appendingPathComponent("receiptfleet-rules.yml")
        let original = try String(contentsOf: rules, encoding: .utf8)

        let neverFires = original.replacingOccurrences(
            of: "expr: max(receiptfleet_fleet_halted) == 1", with: "expr: max(receiptfleet_fleet_halted) == 2")
        #expect(neverFires != original)
        try neverFires.write(to: rules, atomically: true, encoding: .utf8)
        let tested = try await promtool(["test", "rules", folder.appendingPathComponent("receiptfleet-rules.test.yml").path])
        #expect(!tested.succeeded)
        #expect(tested.output.contains("ReceiptFleetHalted"))

        try original.replacingOccurrences(of: "max(receiptfleet_outbox_lag_seconds) > 300", with: "max(receiptfleet_outbox_lag_seconds > 300")
            .write(to: rules, atomically: true, encoding: .utf8)
        let checked = try await promtool(["check", "rules", rules.path])
        #expect(!checked.succeeded)
    }

    static func alertRules() async throws -> [YAMLNode] {
        try await yamlDocuments(Repository.url(rules))[0]["groups"].array
            .flatMap { $0["rules"].array }
            .filter { $0["alert"].exists }
    }

    static func alertNames() async throws -> [String] { try await alertRules().compactMap { $0["alert"].string } }
}

func promtool(_ arguments: [String]) async throws -> CommandResult {
    try await run("promtool", arguments, from: "Debian's prometheus package")
}
