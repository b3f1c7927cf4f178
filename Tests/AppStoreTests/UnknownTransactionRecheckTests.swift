import AppStore
import Foundation
import Testing

/// Which one environment a re-check asks about a transaction Apple knew in neither.
struct UnknownTransactionRecheckTests {
    static let firstNight = Date(timeIntervalSince1970: 1_795_000_000)
    static let ids = (0..<1_000).map { String(2_000_000_000_000_000 + $0 * 7) }

    /// For each transaction, how many of its re-checks, `nights` apart, ask its filed environment.
    static func filedAsked(every nights: Int, rechecks count: Int) -> [Int] {
        ids.map { id in
            (1...count).filter { recheck in
                let night = firstNight + Double(recheck * nights) * 86_400
                return AppStoreEnvironment.recheck(ofUnknown: id, filedIn: .production, on: night) == .production
            }.count
        }
    }

    @Test func nightlyRechecksAskBothEnvironmentsAboutHalfTheTimeEach() {
        let filed = Self.filedAsked(every: 1, rechecks: 30)
        #expect(filed.allSatisfy { (1..<30).contains($0) }, "each transaction is asked in both over its 30 re-checks")
        let share = Double(filed.reduce(0, +)) / Double(30 * Self.ids.count)
        #expect(abs(share - 0.5) < 0.02, "even odds: \(share)")
    }

    /// The night's parity would ask one environment forever when re-checks come every other night.
    @Test func rechecksEveryOtherNightStillAskBoth() {
        let filed = Self.filedAsked(every: 2, rechecks: 15)
        let share = Double(filed.reduce(0, +)) / Double(15 * Self.ids.count)
        #expect(abs(share - 0.5) < 0.03, "even odds: \(share)")
        #expect(filed.filter { (1..<15).contains($0) }.count > 990, "nearly every transaction is asked in both")
    }

    @Test func theSameNightAsksTheSameEnvironmentAndTheOtherIsTheOther() {
        let night = Self.firstNight + 3_600
        #expect(AppStoreEnvironment.recheck(ofUnknown: "2000000000000007", filedIn: .sandbox, on: night)
            == AppStoreEnvironment.recheck(ofUnknown: "2000000000000007", filedIn: .sandbox, on: night + 3_600))
        #expect(AppStoreEnvironment.production.other == .sandbox)
        #expect(AppStoreEnvironment.sandbox.other == .production)
    }
}
