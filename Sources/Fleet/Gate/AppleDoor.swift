import AppStore
import AppStoreClients
import FleetConfiguration
import Foundation
import JobQueue
import Lanes
import VerificationUseCase

/// The door every call to Apple outside a verification goes through: an operator's extensions
/// (one and mass), order lookups, notification history and the test notification, the console's,
/// and the refund requests' answers. A verification's calls pass the same gate as the use case's
/// `AppleGate` (`PacedGate`, `LaneGate`); this is that gate for a caller that makes one call at a
/// time. Each call waits for its endpoint's budget, Apple's Retry-After included, up to the
/// door's patience, and is refused at once, saying which and why, while a pause or a halt covers
/// its endpoint: an operator's command must not add to Apple's load when the fleet holds back.
/// Blocks its thread.
public struct AppleDoor {
    private let gate: FleetGate
    private let settings: FleetSettings
    private let metrics: FleetMetrics
    private let clock: any FleetClock
    /// How long one call may wait for its endpoint's budget and Apple's Retry-After, in all.
    private let patience: Duration

    /// An operator waits this long for an endpoint's budget before the command gives up, saying why.
    public static let operatorPatience = Duration.seconds(60)

    public init(gate: FleetGate, settings: FleetSettings, metrics: FleetMetrics, clock: any FleetClock, patience: Duration) {
        (self.gate, self.settings, self.metrics, self.clock, self.patience) = (gate, settings, metrics, clock, patience)
    }

    /// `call`, once its endpoint's budget lets it go; again after Apple's Retry-After when Apple
    /// answers 429 (reported to the fleet, so every caller of the endpoint waits), while the
    /// patience lasts. Throws `AppleDoorClosed` when it may not go, or Apple's error.
    public func call<T>(_ endpoint: AppleEndpoint, forApp app: String?, _ call: () throws -> T) throws -> T {
        let deadline = clock.after(patience)
        while true {
            try admit(endpoint, forApp: app, before: deadline)
            let started = ContinuousClock.now
            let result = Result { try call() }
            metrics.calledApple(endpoint, taking: ContinuousClock.now - started)
            do {
                let answer = try result.get()
                metrics.calledApple(endpoint, .sent)
                return answer
            } catch let error as ServerAPICallError {
                guard let retryAfter = error.retryAfter else {
                    metrics.calledApple(endpoint, .sent)
                    throw error
                }
                metrics.calledApple(endpoint, .throttled)
                // The next admission answers `.throttled` until then: waited for there, or given up.
                _ = try gate.reportThrottled(endpoint, for: retryAfter, settings: settings)
            }
        }
    }

    /// Waits for the endpoint's slot, or throws why the call may not go.
    private func admit(_ endpoint: AppleEndpoint, forApp app: String?, before deadline: Date) throws {
        // A pause or a halt refuses at once, before the gate is asked: asking would make this call
        // the paused fleet's probe, which belongs to the workers.
        if let closed = try closure(of: endpoint, forApp: app) {
            metrics.calledApple(endpoint, .refused)
            throw closed
        }
        while true {
            let left = Duration.seconds(max(0, deadline.timeIntervalSince(clock.now())))
            let admission = try gate.admit(endpoint, forApp: app, within: min(left, Self.horizon), settings: settings)
            guard let refusal = admission.refusal else {
                if case .granted(let slots) = admission { clock.sleep(max(.zero, slots[0])) }
                return
            }
            switch refusal {
            case .rateLimited(let wait), .throttled(let wait):
                guard wait <= left else {
                    metrics.calledApple(endpoint, .gaveUp)
                    throw AppleDoorClosed(endpoint: endpoint, refusal: refusal, reason: nil)
                }
                clock.sleep(wait)
            case .paused, .halted, .appHalted:
                metrics.calledApple(endpoint, .refused)
                throw AppleDoorClosed(endpoint: endpoint, refusal: refusal, reason: admission.haltReason)
            }
        }
    }

    /// How far ahead one admission books: a slot further off is asked for again nearer the time.
    static let horizon = Duration.seconds(1)

    /// The pause or the halt that covers `endpoint` for `app`, read in one round trip; nil when none.
    private func closure(of endpoint: AppleEndpoint, forApp app: String?) throws -> AppleDoorClosed? {
        let group = settings.haltGroup(for: endpoint.backend)
        let haltingApp = endpoint.haltingApp(app)
        let standing = try gate.standing(groups: group.map { [$0] } ?? [], apps: haltingApp.map { [$0] } ?? [])
        if let halt = standing.fleet { return AppleDoorClosed(endpoint: endpoint, refusal: .halted, reason: halt.reason) }
        if let group, let halt = standing.groups[group] { return AppleDoorClosed(endpoint: endpoint, refusal: .halted, reason: halt.reason) }
        if let haltingApp, let halt = standing.apps[haltingApp] {
            return AppleDoorClosed(endpoint: endpoint, refusal: .appHalted, reason: halt.reason)
        }
        if let until = standing.pausedUntil {
            let left = Double(until) / 1000 - clock.now().timeIntervalSince1970
            return AppleDoorClosed(endpoint: endpoint, refusal: .paused(.milliseconds(Int64(max(0, left) * 1000))), reason: nil)
        }
        return nil
    }
}

/// Why the door did not let a call to Apple go: the endpoint, and what stood in its way.
public struct AppleDoorClosed: Error, CustomStringConvertible {
    public let endpoint: AppleEndpoint
    public let refusal: Refusal
    /// The halt's reason, when a halt closed the door.
    public let reason: String?

    /// When to ask again.
    public var wait: Duration {
        switch refusal {
        case .paused(let wait), .throttled(let wait), .rateLimited(let wait): wait
        case .halted, .appHalted: Refusal.haltedWait
        }
    }

    public var description: String {
        let call = "Apple's \(endpoint.rawValue.replacingOccurrences(of: "_", with: " ")) was not asked"
        switch refusal {
        case .paused(let wait):
            return "\(call): the fleet is paused because Apple is unavailable (for about \(wait.components.seconds) s more, then "
                + "one call finds out whether Apple is back). Try again then; `receiptfleet status` shows the pause."
        case .throttled(let wait):
            return "\(call): Apple asked the fleet to slow down on this endpoint (429) for \(wait.components.seconds) s more. Try again then."
        case .rateLimited(let wait):
            return "\(call): the endpoint's rate limit is taken by other calls for \(wait.components.seconds) s more. Try again then, "
                + "or raise server-api-rate-limit if Apple allows it."
        case .halted:
            return "\(call): the fleet is halted for it (\(reason ?? "no reason noted")). Fix the cause, then `receiptfleet resume`."
        case .appHalted:
            return "\(call): the app is halted (\(reason ?? "no reason noted")). Fix the cause, then `receiptfleet resume --app`."
        }
    }
}

extension Admission {
    /// The reason of a halt; nil for any other admission.
    var haltReason: String? {
        switch self {
        case .halted(let reason), .appHalted(let reason): reason
        default: nil
        }
    }
}
