import Fleet
import Foundation
import Observability
import TestSupport
import Testing

/// The metric names are a contract between the fleet's code, the dashboards, the alert rules and
/// docs/metrics.md. These tests scrape a running worker and hold every side to it.
@Suite struct MetricsContractTests {
    /// The names agreed for the dashboards and alert rules (docs/metrics.md).
    static let contract: Set<String> = [
        "receiptfleet_jobs", "receiptfleet_oldest_job_age_seconds", "receiptfleet_live_workers", "receiptfleet_silent_workers", "receiptfleet_fleet_paused",
        "receiptfleet_fleet_halted", "receiptfleet_server_api_halted", "receiptfleet_app_halted", "receiptfleet_app_verified_last_minute",
        "receiptfleet_app_notification_first", "receiptfleet_app_freshness_p99_seconds", "receiptfleet_app_checks_per_subscription",
        "receiptfleet_rate_limit_per_second", "receiptfleet_rate_limiter_tokens_granted_total",
        "receiptfleet_outbox_unpublished_events", "receiptfleet_outbox_lag_seconds",
        "receiptfleet_scheduler_last_success_timestamp_seconds", "receiptfleet_jobs_processed_total",
        "receiptfleet_verify_receipt_duration_seconds", "receiptfleet_apple_responses_total",
        "receiptfleet_rate_limiter_waits_total", "receiptfleet_rate_limiter_wait_seconds_total", "receiptfleet_pause_probes_total",
        "receiptfleet_rate_limiter_slots_given_up_total",
        "receiptfleet_persist_duration_seconds", "receiptfleet_events_published_total", "receiptfleet_webhook_deliveries_total",
        "receiptfleet_scheduler_jobs_enqueued_total", "receiptfleet_build_info",
        "receiptfleet_consumption_requests_total", "receiptfleet_consumption_requests_nearing_deadline",
        "receiptfleet_apple_door_calls_total", "receiptfleet_apple_call_duration_seconds",
    ]

    /// A worker process that has just started, with its metrics server, scraped once.
    static func scrapeARunningWorker() async throws -> Scrape {
        try await Deployment.with { deployment in
            let metrics = ProcessMetrics()
            return try await RunningServices.worker(settings: deployment.settings, metrics: metrics, logger: quietLogger).whileRunning {
                try await withMetricsServer(deployment.settings, metrics: metrics) { try await $0.scrape() }
            }
        }
    }

    @Test func everyMetricTheDashboardsAndAlertRulesQueryIsServed() async throws {
        let scrape = try await Self.scrapeARunningWorker()
        let root = TestServers.repositoryRoot
        var queried: [String: Set<String>] = [:]

        let dashboards = try files(under: "dashboards", endingIn: [".json"])
        if FileManager.default.fileExists(atPath: root + "/dashboards") {
            #expect(!dashboards.isEmpty, "dashboards/ holds no .json dashboard")
        }
        for file in dashboards {
            let expressions = try QueryNames.dashboardExpressions(try Data(contentsOf: URL(fileURLWithPath: root + "/" + file)))
            queried[file] = expressions.reduce(into: []) { $0.formUnion(QueryNames.inPromQL($1)) }
        }

        var recorded: Set<String> = []
        let ruleFiles = try files(under: "deploy", endingIn: [".yml", ".yaml"]).filter {
            QueryNames.isRuleFile(try String(contentsOfFile: root + "/" + $0, encoding: .utf8))
        }
        if FileManager.default.fileExists(atPath: root + "/deploy") {
            #expect(!ruleFiles.isEmpty, "deploy/ holds no Prometheus rule file (a YAML file with groups:)")
        }
        for file in ruleFiles {
            let rules = QueryNames.ruleFile(try String(contentsOfFile: root + "/" + file, encoding: .utf8))
            recorded.formUnion(rules.recorded)
            queried[file] = rules.expressions.reduce(into: []) { $0.formUnion(QueryNames.inPromQL($1)) }
        }

        for (file, names) in queried.sorted(by: { $0.key < $1.key }) {
            let missing = QueryNames.missing(from: scrape, in: names.subtracting(recorded))
            #expect(missing.isEmpty, "\(file) queries metrics that a worker does not serve: \(missing.sorted())")
        }
    }

    @Test func theNameExtractorFindsEveryName() throws {
        #expect(QueryNames.inPromQL(#"""
            sum(receiptfleet_jobs{state=~"ready|ready_high|delayed"})
              / clamp_min(sum(rate(receiptfleet_jobs_processed_total[5m])), 0.001)
            """#) == ["receiptfleet_jobs", "receiptfleet_jobs_processed_total"])
        #expect(QueryNames.inPromQL(#"""
            histogram_quantile(0.99, sum by (le) (rate(receiptfleet_verify_receipt_duration_seconds_bucket{job="receiptfleet_worker"}[5m])))
            # receiptfleet_in_a_comment
            / receiptfleet:throughput:rate1m + my_receiptfleet_jobs + receiptfleet_
            """#) == ["receiptfleet_verify_receipt_duration_seconds_bucket"])

        let dashboard = #"""
            {"panels": [{"targets": [{"expr": "max(receiptfleet_live_workers)"}]},
                        {"type": "row", "panels": [{"targets": [{"expr": "max(receiptfleet_fleet_halted)", "legendFormat": "receiptfleet_legend"}]}]}],
             "templating": {"list": [{"name": "datasource", "type": "datasource", "query": "prometheus"},
                                     {"name": "instance", "query": {"query": "label_values(receiptfleet_build_info, instance)"},
                                      "definition": "label_values(receiptfleet_build_info, instance)"}]}}
            """#
        let fromDashboard = try QueryNames.dashboardExpressions(Data(dashboard.utf8)).reduce(into: Set<String>()) {
            $0.formUnion(QueryNames.inPromQL($1))
        }
        #expect(fromDashboard == ["receiptfleet_live_workers", "receiptfleet_fleet_halted", "receiptfleet_build_info"])

        let rules = """
            groups:
              - name: receiptfleet
                rules:
                  - record: receiptfleet_throughput_per_second
                    expr: sum(rate(receiptfleet_jobs_processed_total[1m]))
                  - alert: FleetHalted
                    expr: max(receiptfleet_fleet_halted) == 1
                    for: 1m
                    labels:
                      severity: critical
                  - alert: OldestJobTooOld
                    expr: |
                      max(receiptfleet_oldest_job_age_seconds)
                        > 3600
                    annotations:
                      summary: "receiptfleet_not_an_expression"
                  - alert: Quoted
                    expr: 'max(receiptfleet_outbox_lag_seconds{job=''relay''}) > 300'
                  - alert: Folded
                    expr: >-
                      sum(receiptfleet_jobs{state="dead"})
                      - sum(receiptfleet_jobs{state="dead"} offset 1h) > 0
            """
        #expect(QueryNames.isRuleFile(rules))
        #expect(!QueryNames.isRuleFile("scrape_configs:\n  - job_name: receiptfleet\n"))
        let parsed = QueryNames.ruleFile(rules)
        #expect(parsed.recorded == ["receiptfleet_throughput_per_second"])
        #expect(parsed.expressions.count == 5)
        #expect(parsed.expressions.reduce(into: Set<String>()) { $0.formUnion(QueryNames.inPromQL($1)) } == [
            "receiptfleet_jobs_processed_total", "receiptfleet_fleet_halted", "receiptfleet_oldest_job_age_seconds",
            "receiptfleet_outbox_lag_seconds", "receiptfleet_jobs",
        ])

        let scrape = Scrape("""
            # TYPE receiptfleet_verify_receipt_duration_seconds histogram
            receiptfleet_verify_receipt_duration_seconds_bucket{le="0.1"} 1
            # TYPE receiptfleet_jobs gauge
            receiptfleet_jobs{state="ready"} 1
            """)
        #expect(QueryNames.missing(from: scrape, in: [
            "receiptfleet_verify_receipt_duration_seconds_bucket", "receiptfleet_verify_receipt_duration_seconds_count",
            "receiptfleet_jobs", "receiptfleet_jobs_count", "receiptfleet_no_such_metric",
        ]) == ["receiptfleet_jobs_count", "receiptfleet_no_such_metric"])
    }

    @Test func aWorkerServesTheContractAndDocsMetricsDescribesExactlyThat() async throws {
        let scrape = try await Self.scrapeARunningWorker()
        let served = Set(scrape.families.keys.filter { $0.hasPrefix("receiptfleet_") })
        #expect(served == Self.contract)
        for (family, type) in scrape.families where family.hasSuffix("_total") { #expect(type == "counter", "\(family)") }

        let doc = try String(contentsOfFile: TestServers.repositoryRoot + "/docs/metrics.md", encoding: .utf8)
        let documented = Set(doc.matches(of: /receiptfleet_[a-z0-9_]+/).map { String($0.output) })
        #expect(QueryNames.missing(from: scrape, in: documented).isEmpty, "docs/metrics.md names metrics a worker does not serve")
        #expect(served.subtracting(documented).isEmpty, "served but not in docs/metrics.md: \(served.subtracting(documented).sorted())")
    }

    /// Files below `folder` of the repository whose names end in one of `suffixes`, as paths
    /// relative to the repository; none when the folder does not exist.
    private func files(under folder: String, endingIn suffixes: [String]) throws -> [String] {
        let root = TestServers.repositoryRoot + "/" + folder
        guard FileManager.default.fileExists(atPath: root) else { return [] }
        let all = try FileManager.default.subpathsOfDirectory(atPath: root)
        return all.filter { path in suffixes.contains { path.hasSuffix($0) } }.map { folder + "/" + $0 }.sorted()
    }
}
