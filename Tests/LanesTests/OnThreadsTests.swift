import Foundation
import Lanes
import Synchronization
import Testing

@Suite struct OnThreadsTests {
    /// Every body runs, and the call returns only once all have ended.
    @Test func everyThreadHasEndedWhenItReturns() {
        final class Seen: Sendable {
            let indices = Mutex<Set<Int>>([])
        }
        let seen = Seen()
        onThreads(4, named: "rf-test") { index in
            seen.indices.withLock { _ = $0.insert(index) }
        }
        #expect(seen.indices.withLock { $0 } == [0, 1, 2, 3])
    }
}
