import FleetConfiguration
import Foundation
import JobQueue
import Lanes
import RedisClient
import Synchronization

/// The time a drill or a benchmark has every process of a deployment read (`shifted-clock`): the
/// system's clock plus the shift in `QueueKeys.timeShift`, which the harness moves forward while
/// the fleet is idle, so that the scheduler, the workers and serve all stand on a later day
/// together, as the queue's scripts do (`ScriptClock.shifted`). Time runs at the real pace, so
/// every wait is a real one. The shift is read at most every tenth of a second.
public final class ShiftedClock: FleetClock {
    private struct Reading {
        var connection: RedisConnection?
        var shift = Duration.zero
        var readAt = ContinuousClock.now - .seconds(1)
    }

    private let settings: FleetSettings
    private let reading = Mutex(Reading())

    public init(settings: FleetSettings) {
        self.settings = settings
    }

    public func now() -> Date { Date().addingTimeInterval(shift().seconds) }

    @discardableResult
    public func sleep(_ duration: Duration, unless stop: StopSignal?) -> Bool { SystemClock().sleep(duration, unless: stop) }

    public func sleep(for duration: Duration) async throws { try await SystemClock().sleep(for: duration) }

    /// The shift as last read; when Redis cannot be read, the last one known.
    private func shift() -> Duration {
        reading.withLock { reading in
            guard reading.readAt.duration(to: .now) >= .milliseconds(100) else { return reading.shift }
            do {
                if reading.connection == nil { reading.connection = try RedisConnection(settings.redisConfiguration()) }
                let key = try QueueKeys(prefix: settings.keyPrefix).timeShift
                let microseconds = try reading.connection?.command("GET", key).string.flatMap { Int64($0) } ?? 0
                (reading.shift, reading.readAt) = (.microseconds(microseconds), .now)
            } catch {
                reading.connection = nil
            }
            return reading.shift
        }
    }
}

extension FleetSettings {
    /// The clock this deployment's processes read: the system's, or the shifted one of drills and benchmarks.
    public func processClock() -> any FleetClock {
        scriptClock == .shifted ? ShiftedClock(settings: self) : SystemClock()
    }
}
