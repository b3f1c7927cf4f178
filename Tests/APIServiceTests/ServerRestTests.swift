@testable import APIService
import Synchronization
import Testing

/// A server that failed to answer rests: work needing it is refused at once, without running, and
/// other errors start no rest. (`FrozenPostgresTests` shows the same through the API on a frozen
/// database, where a loaded machine blurs "at once".)
@Suite struct ServerRestTests {
    struct NotAnswering: Error {}
    struct Refused: Error {}

    @Test func aFailureToAnswerRefusesTheNextWorkWithoutRunningIt() async throws {
        let rest = ServerRest(code: "database_unavailable", what: "the database is not answering") { $0 is NotAnswering }
        let ran = Atomic<Int>(0)
        await #expect(throws: Refused.self) { try await rest.guarding { throw Refused() } }
        _ = try await rest.guarding { ran.add(1, ordering: .relaxed) }
        #expect(ran.load(ordering: .relaxed) == 1, "an error that is not a failure to answer starts no rest")

        await #expect(throws: APIError.self) { try await rest.guarding { throw NotAnswering() } }
        await #expect(throws: APIError.self) { try await rest.guarding { ran.add(1, ordering: .relaxed) } }
        #expect(throws: APIError.self) { try rest.guardingOnLane { ran.add(1, ordering: .relaxed) } }
        #expect(ran.load(ordering: .relaxed) == 1, "during the rest nothing ran")
    }
}
