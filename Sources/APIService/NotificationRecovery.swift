import AppStore
import Fleet
import FleetConfiguration
import Foundation
import Lanes
import Ledger
import Logging

/// Brings in the V2 notifications Apple sent while `serve` could not take them: Get Notification
/// History for one app in one environment, page by page through the fleet's `AppleDoor`, each
/// notification the ledger does not hold yet (by its notificationUUID) handed to the same intake
/// as POST /v1/notifications/apple (`NotificationReplay`). Running it again changes nothing.
public struct NotificationRecovery: Sendable {
    /// What a recovery found, by what became of each notification.
    public struct Tally: Sendable {
        public var found = 0
        public var refused = 0
        public var outcomes: [String: Int] = [:]

        public init() {}

        /// Not held yet: recorded now (whatever came of it: queued, stored, for no known
        /// subscription…), or in a dry run, would be.
        public var new: Int { found - refused - outcomes["duplicate", default: 0] }

        mutating func count(_ outcome: String) { outcomes[outcome, default: 0] += 1 }

        public func summary(dryRun: Bool) -> String {
            let listed = outcomes.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" } + (refused > 0 ? ["refused \(refused)"] : [])
            let head = dryRun ? "Would bring in \(new) of \(found) notifications" : "Brought in \(new) of \(found) notifications"
            return head + (listed.isEmpty ? "." : " (" + listed.joined(separator: ", ") + ").")
        }
    }

    let fleet: FleetSettings
    let replay: NotificationReplay
    /// The environments whose history is read, and whose notifications are taken: serve's.
    let environments: Set<AppStoreEnvironment>
    let clock: any FleetClock
    /// Its calls to Apple and the notifications it takes, counted and timed; the calls join the
    /// fleet's timings as a run ends.
    let metrics = FleetMetrics()
    let logger: Logger
    /// How long a page may wait for the endpoint's budget and Apple's Retry-After: an operator's patience.
    let patience = AppleDoor.operatorPatience

    /// Judges what it reads as serve judges a delivered notification (`configuration`'s trusted
    /// roots and notification-environments).
    public init(fleet: FleetSettings, configuration: ResolvedConfiguration, logger: Logger) throws {
        environments = try configuration[Settings.notificationEnvironments]
        replay = NotificationReplay(
            fleet: fleet, trustedRoots: try configuration.trustedRoots(), acceptedEnvironments: environments, metrics: metrics,
            logger: logger)
        self.fleet = fleet
        self.logger = logger
        clock = fleet.processClock()
    }

    /// How far a resumed run reaches back before the end of the last one: clocks drift, and Apple
    /// stamps a notification when it signs it, a little before it lists it.
    public static let resumeOverlap: TimeInterval = 3_600

    /// Where a run over `app` (nil: every app) resumes: the end of the last recorded run that read
    /// at least as much (every app or the same one; every notification, or only failures when this
    /// one reads only those), less `resumeOverlap`; nil without one. Apple lists a failure until it
    /// is delivered, so without resuming a run every six hours over 8 days read each one again 32 times.
    public static func resumePoint(in ledger: Ledger, app: String?, onlyFailures: Bool) throws -> Date? {
        try ledger.auditTrail(action: "notifications.recover", limit: 20).first { entry in
            entry.outcome == "ok" && (entry.target == nil || entry.target == app)
                && (entry.details["only_failures"] == "false" || onlyFailures)
        }.flatMap { $0.details["until"] }.flatMap { try? Date($0, strategy: .iso8601) }?.addingTimeInterval(-resumeOverlap)
    }

    /// How long Apple keeps the notification history of `environment`.
    public static func keptDays(_ environment: AppStoreEnvironment) -> Double { environment == .production ? 180 : 30 }

    /// The earliest start Apple answers for (a start past what it keeps answers 4000012), a minute inside it.
    public func earliestStart(in environment: AppStoreEnvironment) -> Date {
        clock.now().addingTimeInterval(-Self.keptDays(environment) * 86_400 + 60)
    }

    /// One app's history in one environment from `start` to `end`, each notification taken (in a
    /// dry run, looked up) as it comes; `page` hears after each page the pages and the tally so far. A
    /// notification whose signature does not hold is counted as refused and told to `refused`.
    public func recover(
        app: String, environment: AppStoreEnvironment, from start: Date, until end: Date, onlyFailures: Bool, dryRun: Bool,
        lane: Lane<Connections>, into tally: inout Tally, page: (_ pages: Int, _ tally: Tally) -> Void, refused: (any Error) -> Void
    ) async throws {
        var token: String?
        var pages = 0
        repeat {
            let asked = token
            let read = try await lane.run { [fleet, clock, patience, metrics] connections in
                let client = try connections.apple.serverAPIClient(forApp: app)
                let door = AppleDoor(gate: connections.gate, settings: fleet, metrics: metrics, clock: clock, patience: patience)
                return try door.call(.notificationHistory, forApp: app) {
                    try client.notificationHistory(in: environment, from: start, until: end, onlyFailures: onlyFailures, after: asked)
                }
            }
            for item in read.notifications {
                tally.found += 1
                let recovered: NotificationReplay.Recovered
                do {
                    recovered = try await replay.read(signedPayload: item.signedPayload, now: clock.now())
                } catch {
                    tally.refused += 1
                    refused(error)
                    continue
                }
                if dryRun {
                    let known = try await lane.run { try $0.ledger.knowsNotification(dedupeKey: recovered.dedupeKey) }
                    tally.count(known ? "duplicate" : "new")
                } else {
                    tally.count(try await lane.run { try replay.take(recovered, connections: $0) })
                }
            }
            pages += 1
            page(pages, tally)
            token = read.hasMore ? read.paginationToken : nil
        } while token != nil
    }
}
