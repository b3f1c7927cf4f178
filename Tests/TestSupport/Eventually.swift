import Foundation
import Lanes

/// Waits until `condition` holds, looking again every `interval`, for at most `limit`; returns
/// whether it held. The one place tests poll: for state that another process or server changes
/// (Redis, PostgreSQL, a child `receiptfleet`, a receiver), which no in-process signal reaches.
/// A duty of this process is waited on through its `DutySignals` instead. It looks again on
/// `clock`, the one the fleet's processes read: the system's, unless a test drives it.
@discardableResult
public func eventually(
    within limit: Duration = .seconds(30), every interval: Duration = .milliseconds(20), on clock: any FleetClock = SystemClock(),
    _ condition: () async throws -> Bool
) async throws -> Bool {
    let deadline = clock.after(limit)
    while true {
        if try await condition() { return true }
        guard clock.now() < deadline else { return false }
        try await clock.sleep(for: interval)
    }
}

/// `eventually` for a thread of a test's own (a blocking C client's): the same polling, the thread
/// blocked between looks. (A name of its own: as an overload, a task's sync condition would
/// choose it and block Swift's pool.)
@discardableResult
public func eventuallyOnThisThread(
    within limit: Duration = .seconds(30), every interval: Duration = .milliseconds(20), on clock: any FleetClock = SystemClock(),
    _ condition: () throws -> Bool
) rethrows -> Bool {
    let deadline = clock.after(limit)
    while true {
        if try condition() { return true }
        guard clock.now() < deadline else { return false }
        clock.sleep(interval)
    }
}
