import Lanes

/// Runs `body` on a new thread of its own and returns its result. The clients block their
/// caller, and blocking calls must stay off Swift's cooperative pool; so tests do their blocking
/// work in here and check the results outside.
public func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await onNewThread(named: "rf-test", body)
}
