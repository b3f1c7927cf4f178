import Foundation
import PostgresClient
import TestSupport
import Testing

@Suite struct LeakTests {
    @Test func openingAndClosingAThousandConnectionsLeaksNoFileDescriptors() async throws {
        let configuration = try testConfiguration()
        let before = openFileDescriptorCount()
        try await onOwnThread {
            for index in 0..<1_000 {
                let connection = try PostgresConnection(configuration: configuration)
                if index.isMultiple(of: 10) { try connection.execute("SELECT 1") }
            }
        }
        // Other suites open and close descriptors meanwhile, so wait for the count to settle back;
        // a leak here would leave a thousand open, far beyond that noise.
        let after = try await settledFileDescriptorCount(target: before)
        #expect(after <= before, "open file descriptors went from \(before) to \(after)")
    }

    /// The descriptor count once it is at most `target`, or the lowest seen within 10 s.
    private func settledFileDescriptorCount(target: Int) async throws -> Int {
        var lowest = openFileDescriptorCount()
        let deadline = ContinuousClock.now + .seconds(10)
        while lowest > target, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(100))
            lowest = min(lowest, openFileDescriptorCount())
        }
        return lowest
    }
}
