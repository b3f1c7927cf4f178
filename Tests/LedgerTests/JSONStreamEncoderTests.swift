import AppStore
import Foundation
@testable import Ledger
import Testing

/// The ledger's `jsonb` parameters are written by `JSONStreamEncoder`: for every type it is given,
/// the same JSON as Foundation's `JSONEncoder` (compared as parsed values, since key order and
/// the escaping of "/" may differ and jsonb keeps neither).
@Suite struct JSONStreamEncoderTests {
    static func agree(_ value: some Encodable) throws {
        let streamed = try JSONValue.parse(JSONStreamEncoder.encode(value))
        let foundation = try JSONValue.parse(Array(JSONEncoder().encode(value)))
        #expect(streamed == foundation)
    }

    @Test func analysesEncodeAsJSONEncoderEncodesThem() throws {
        // A first look at three paid months, then a renewal, a refund with its reason and a new receipt.
        let first = try Scenario.analyse(stored: nil, "7", Scenario.response(Scenario.months("7", 3)), at: Scenario.day(3, 15))
        var later = Scenario.months("7", 4)
        later[3].cancelled = Scenario.day(4, 3)
        later[3].cancellationReason = 1
        let second = try Scenario.analyse(
            stored: first.state, "7", Scenario.response(later, autoRenew: false, receipt: "MIIT/+=="), at: Scenario.day(4, 5))
        #expect(!second.events.isEmpty && !second.transactions.isEmpty, "the scenario has something to encode")
        for analysis in [first, second] {
            try Self.agree(analysis.state)
            try Self.agree([analysis.state])
            try Self.agree(analysis.transactions)
            try Self.agree(analysis.events)
        }
    }

    @Test func plainValuesEncodeAsJSONEncoderEncodesThem() throws {
        try Self.agree(["a\"b\\c/d\n\u{1}é😀": 1, "": -9_223_372_036_854_775_808])
        try Self.agree([[Int64.max], [], [0]])
        try Self.agree(["x": [true, false]])
        try Self.agree([1.5, -2.25e-10, 1e300])
        try Self.agree(JSONValue.object(["k": .array([.null, .string("s"), .integer(3), .number(0.5), .bool(true)])]))
    }

    /// A value whose encoding asks for a nested container, which the stream encoder does not do.
    struct Nested: Encodable {
        enum Keys: CodingKey { case outer, inner }
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Keys.self)
            var nested = container.nestedContainer(keyedBy: Keys.self, forKey: .outer)
            try nested.encode(1, forKey: .inner)
        }
    }

    @Test func whatItDoesNotSupportIsAnErrorNotACrash() {
        #expect(throws: EncodingError.self) { try JSONStreamEncoder.encode(Nested()) }
        #expect(throws: EncodingError.self) { try JSONStreamEncoder.encode([Nested()]) }
    }

    @Test func nonFiniteNumbersAreRefusedAsJSONEncoderRefusesThem() {
        #expect(throws: EncodingError.self) { try JSONStreamEncoder.encode([Double.nan]) }
        #expect(throws: EncodingError.self) { try JSONEncoder().encode([Double.nan]) }
    }
}
