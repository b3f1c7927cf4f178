import Foundation
import ServiceLifecycle

extension SimulatedAppStore {
    /// What `receiptfleet simulate-appstore serve` runs: the HTTP server on `host`:`port`, which
    /// says where it listens and how it is set up; the statistics every `statsInterval` (zero:
    /// never); and the V2 notifications' announcer. `say` tells a line.
    public func services(host: String, port: Int, statsInterval: Duration, say: @escaping @Sendable (String) -> Void) -> [any Service] {
        let serverAPINote = serverAPI.map { "; App Store Server API for fleet seeds " + $0.seeds.map(String.init).joined(separator: ", ") } ?? ""
        var services: [any Service] = [server(host: host, port: port) { [knobs, clock] bound in
            say("App Store simulator listening on http://\(host):\(bound) "
                + "(production /verifyReceipt, sandbox /sandbox/verifyReceipt, GET /stats); "
                + "clock at \(Date(timeIntervalSince1970: Double(clock.nowMs) / 1000).formatted(.iso8601)); latency \(knobs.latency), "
                + "shared secret " + (knobs.sharedSecret == nil ? "not required" : "required") + serverAPINote)
        }]
        if statsInterval > .zero { services.append(StatisticsLog(simulator: self, interval: statsInterval, say: say)) }
        services.append(NotificationAnnouncer(self))
        return services
    }
}

/// Tells the simulator's statistics every interval until graceful shutdown.
private struct StatisticsLog: Service {
    let simulator: SimulatedAppStore
    let interval: Duration
    let say: @Sendable (String) -> Void

    func run() async {
        await cancelWhenGracefulShutdown {
            while (try? await Task.sleep(for: interval)) != nil {
                say(simulator.statistics.summary)
            }
        }
    }
}

extension SimulatorStatistics {
    /// The statistics in one line, as `simulate-appstore serve` tells them.
    public var summary: String {
        let recent = perSecondRecent.reduce(0, +) / max(1, perSecondRecent.count)
        let statuses = byStatus.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
        return "stats: \(requestsTotal) requests, \(recent)/s over 10 s, max \(maxRequestsInOneSecond) in one second, "
            + "\(rateLimitViolations) rate-limit violations, \(garbageBodies) garbage, "
            + "statuses \(statuses.joined(separator: " "))"
    }
}
