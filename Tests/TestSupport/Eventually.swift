/// Waits until `condition` holds, looking again every `interval`, for at most `limit`; returns
/// whether it held. The one place tests poll: for state that another process or server changes
/// (Redis, PostgreSQL, a child `receiptfleet`, a receiver), which no in-process signal reaches.
/// A duty of this process is waited on through its `DutySignals` instead.
@discardableResult
public func eventually(
    within limit: Duration = .seconds(30), every interval: Duration = .milliseconds(20), _ condition: () async throws -> Bool
) async throws -> Bool {
    let deadline = ContinuousClock.now + limit
    while true {
        if try await condition() { return true }
        guard ContinuousClock.now < deadline else { return false }
        try await Task.sleep(for: interval)
    }
}
