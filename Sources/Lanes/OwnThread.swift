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

/// Runs `body(index)` on `count` threads of its own, each named `name-index`, and returns once
/// every one has ended: joined, as a thread waits for threads, with nothing signalled by hand.
public func onThreads(_ count: Int, named name: String, _ body: @escaping @Sendable (Int) -> Void) {
    final class Start {
        let run: () -> Void
        init(_ run: @escaping () -> Void) { self.run = run }
    }
    let threads = (0..<count).map { index -> pthread_t in
        let start = Unmanaged.passRetained(Start {
            nameCurrentThread("\(name)-\(index)")
            body(index)
        })
        var thread = pthread_t()
        let created = pthread_create(&thread, nil, { context in
            let start = Unmanaged<Start>.fromOpaque(context!).takeRetainedValue()
            start.run()
            return nil
        }, start.toOpaque())
        precondition(created == 0, "cannot start thread \(name)-\(index): error \(created)")
        return thread
    }
    for thread in threads { pthread_join(thread, nil) }
}
