import Foundation

/// Runs `body` on a new thread named `name` and returns its result.
///
/// For async code that must wait on something blocking (a C call, threads winding down) without
/// holding one of Swift's cooperative threads meanwhile: on a small machine there are only one or
/// two of those, and every task in the process would wait with it.
public func onNewThread<T: Sendable>(
    named name: String, _ body: @escaping @Sendable () throws -> T
) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread {
            nameCurrentThread(name)
            continuation.resume(with: Result { try body() })
        }.start()
    }
}
