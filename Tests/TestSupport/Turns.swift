/// At most `width` holders at a time, the others waiting in order: for shared servers that a
/// whole test run would otherwise hit at once.
actor Turns {
    private let width: Int
    private var holders = 0
    private var waiting: [CheckedContinuation<Void, Never>] = []

    init(width: Int) { self.width = width }

    /// Runs `body` in a turn, and gives the turn back also when `body` throws.
    nonisolated func taking<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        await acquire()
        do {
            let result = try await body()
            await release()
            return result
        } catch {
            await release()
            throw error
        }
    }

    private func acquire() async {
        guard holders == width else { holders += 1; return }
        await withCheckedContinuation { waiting.append($0) }
    }

    /// A waiter takes the turn over, so the count stays as it is.
    private func release() {
        if waiting.isEmpty { holders -= 1 } else { waiting.removeFirst().resume() }
    }
}
