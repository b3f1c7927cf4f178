import Foundation

extension FleetStatus {
    /// The reading as `receiptfleet status --json` prints it: every part, keys sorted, times in ISO 8601.
    public func json() throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        encoder.dateEncodingStrategy = .iso8601
        return String(decoding: try encoder.encode(self), as: UTF8.self)
    }

    /// The reading as `receiptfleet status` prints it: a line per part, its label first.
    public var text: String {
        let status = self
        let queue = status.queue
        var lines: [String] = []
        func line(_ label: String, _ text: String) {
            lines.append(label.padding(toLength: 14, withPad: " ", startingAt: 0) + text)
        }
        func list(_ counts: [String: Int]?) -> String {
            guard let counts else { return "-" }
            return counts.isEmpty ? "-" : counts.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
        }
        let delayed = queue.delayedDue + queue.delayedLater
        line("queue", "\(queue.ready) ready (\(queue.readyHigh) high priority), \(queue.reserved) reserved, "
            + "\(delayed) delayed (\(queue.delayedDue) due), \(queue.dead) dead")
        let oldest: String = queue.oldestJobAgeSeconds.map { String(format: "%.0f s", $0) } ?? "-"
        line("oldest job", oldest)
        if let reason = queue.haltedReason {
            line("gate", "HALTED: \(reason) (fix it, then `receiptfleet resume`)")
        } else if let until = queue.pausedUntil {
            line("gate", "paused until \(until) (Apple unavailable; one probe per period)")
        } else {
            line("gate", "open")
        }
        if let reason = status.serverAPI.haltedReason {
            line("server api", "HALTED: \(reason) (verifyReceipt goes on; fix it, then `receiptfleet resume`)")
        }
        for (endpoint, seconds) in status.serverAPI.throttledSeconds.sorted(by: { $0.key < $1.key }) {
            line("server api", "\(endpoint): Apple's rate limit is spent for \(Int(seconds.rounded(.up))) s more (429)")
        }
        line("workers", "\(queue.liveWorkers) live (\(queue.consumers) consumers known)")
        for worker in queue.silentWorkers {
            line("stopped", "\(worker.process) has not reported for \(worker.silentSeconds) s (stopped, frozen, cut off from Redis "
                + "or dead); it holds \(worker.held)")
        }
        for worker in queue.starvedWorkers {
            line("starved", "\(worker.process) gave up \(worker.slotsGivenUp) rate-limit slots, the last "
                + "\(worker.lastGivenUpSecondsAgo) s ago: its threads wake too late for them (CPU starved); "
                + "give it more CPU or fewer threads")
        }
        line("throughput", "\(status.verifiedLastMinute) verified in the last minute")
        line("apple", list(status.appleStatusLastMinute))
        line("subscriptions", list(status.subscriptions))
        // Split by app once there are several (or one is halted): each has its own secret and halt.
        if status.apps.count > 1 || status.apps.contains(where: { $0.haltedReason != nil }) {
            for app in status.apps {
                let halt = app.haltedReason.map { "HALTED: \($0) (the other apps go on; fix it, then `receiptfleet resume --app \(app.name)`); " } ?? ""
                line("app \(app.name)", halt + "\(app.verifiedLastMinute) verified in the last minute; " + list(app.subscriptions))
            }
        }
        for app in status.apps {
            guard let schedule = app.schedule else { continue }
            line("schedule", (status.apps.count > 1 ? "\(app.name): " : "")
                 + (schedule.notificationFirst ? "notification-first (\(schedule.why))"
                    : "NIGHTLY: \(schedule.why); check that App Store Connect sends V2 notifications to serve")
                 + (schedule.freshnessP99Seconds.map { String(format: "; fresh within %.0f s (p99)", $0) } ?? "")
                 + (schedule.checksPerSubscription.map { String(format: ", %.2f checks a subscription, last day", $0) } ?? ""))
        }
        line("due now", status.dueNow.map(String.init) ?? "-")
        line("events (1 h)", list(status.eventsLastHour))
        let lag: String = status.outbox.oldestUnpublishedAgeSeconds.map { String(format: ", oldest %.0f s", $0) } ?? ""
        line("outbox", "\(status.outbox.unpublished) unpublished" + lag)
        if let run = status.lastSchedulerRun {
            let progress = status.lastRunTally.map {
                "; \($0.verified) verified, \($0.dead) dead" + ($0.replayed == 0 ? "" : " (\($0.replayed) replayed)") + ", \($0.toGo) to go"
            } ?? ""
            line("scheduler", "pass \(run.passID): \(run.found) due, \(run.enqueued) enqueued" + progress)
        } else {
            line("scheduler", "no pass recorded")
        }
        if let run = status.lastNotificationRecovery {
            line("missed notif.", "last recovery \(run.at.formatted(.iso8601)): \(run.found) in Apple's history, \(run.new) new"
                 + (run.outcome == "ok" ? "" : "; \(run.outcome)"))
        } else {
            line("missed notif.", "no recovery recorded (`receiptfleet notifications recover`, every six hours from its timer)")
        }
        return lines.joined(separator: "\n")
    }
}

extension FleetStatus {
    /// Why a check of a subscription of `app` sent nothing (`verify`'s postponed check): a halt,
    /// with what lifts it, a pause, or else Apple's answer.
    public func whyPostponed(app: String) -> String {
        queue.haltedReason.map { "the fleet is halted (\($0)); `receiptfleet resume` lifts it" }
            ?? apps.first { $0.name == app }?.haltedReason.map { "the app \(app) is halted (\($0)); `receiptfleet resume --app \(app)` lifts it" }
            ?? queue.pausedUntil.map { "the fleet is paused until \($0): Apple is unavailable" }
            ?? "Apple did not answer usefully"
    }
}
