import BuildInfo
import Foundation
import Testing

/// What `receiptfleet --version` says is stamped at build time by the BuildStamp plugin.
@Suite struct BuildStampTests {
    @Test func theBinaryNamesTheCommitItWasBuiltFromAndTheDay() async throws {
        let head = try await run("git", ["-C", Repository.root.path, "rev-parse", "--short=12", "HEAD"], from: "git")
        #expect(head.succeeded, "\(head)")
        #expect(BuildInfo.commit == head.output.trimmingCharacters(in: .whitespacesAndNewlines))
        #expect(BuildInfo.buildDate.range(of: #"^\d{4}-\d{2}-\d{2}$"#, options: .regularExpression) != nil, "\(BuildInfo.buildDate)")
        #expect(BuildInfo.description == "\(BuildInfo.version) (commit \(BuildInfo.commit), built \(BuildInfo.buildDate), Swift \(BuildInfo.swift))")
    }
}
