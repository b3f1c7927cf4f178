import Foundation
import PostgresClient
import TestSupport
import Testing

@Suite struct LeakTests {
    @Test func openingAndClosingAThousandConnectionsLeaksNoFileDescriptors() async throws {
        let configuration = try testConfiguration()
        let leaked = try await descriptorsLeaked {
            try await onOwnThread {
                for index in 0..<1_000 {
                    let connection = try PostgresConnection(configuration: configuration)
                    if index.isMultiple(of: 10) { try connection.execute("SELECT 1") }
                }
            }
        }
        #expect(leaked <= allowedDescriptorNoise, "\(leaked) descriptors more than before")
    }
}
