@testable import AppStore
import Foundation
import PropertyBased
import Testing

/// The byte-level parser reads what Foundation's `JSONDecoder` read, value for value, and refuses
/// what it refused: on Apple's recorded answers, on those answers damaged byte by byte, on random
/// bytes, and on the corners of the grammar.
@Suite struct JSONParserTests {
    /// Foundation's reading, through `JSONValue`'s Codable conformance: what the worker used before.
    static func foundation(_ bytes: [UInt8]) -> JSONValue? {
        try? JSONDecoder().decode(JSONValue.self, from: Data(bytes))
    }

    static func parser(_ bytes: [UInt8]) -> JSONValue? { try? JSONValue.parse(bytes) }

    @Test func applesAnswersReadAsFoundationReadThem() throws {
        for fixture in Fixture.allCases {
            let bytes = Array(try fixture.bytes())
            let parsed = try #require(Self.parser(bytes), "\(fixture)")
            #expect(parsed == Self.foundation(bytes), "\(fixture)")
        }
    }

    @Test func damagedAnswersAreReadOrRefusedAsFoundationDid() async throws {
        let fixtures = try Fixture.allCases.map { Array(try $0.bytes()) }
        await propertyCheck(
            count: 2_000, input: Gen.int(in: 0...(fixtures.count - 1)), Gen.int(in: 7...9), Gen.int(in: 0...100_000),
            Gen.uint8().array(of: 1...8)
        ) { index, kind, position, garbage in
            var bytes = fixtures[index]
            MutationTests.damage(&bytes, kind: kind, at: position, with: garbage)
            #expect(Self.parser(bytes) == Self.foundation(bytes))
        }
    }

    /// Zero bytes stay out: from them Foundation guessed UTF-16 or UTF-32 (see `utf8Only`).
    @Test func randomBytesAreReadOrRefusedAsFoundationDid() async throws {
        let alphabet = Array(#"{}[],:"\ -+.eE0123456789truefalsn\u/"#.utf8) + [0x01, 0x1F, 0x80, 0xC3, 0xA9, 0xFF]
        await propertyCheck(count: 2_000, input: Gen.int(in: 0...(alphabet.count - 1)).array(of: 0...24)) { picks in
            let bytes = picks.map { alphabet[$0] }
            #expect(Self.parser(bytes) == Self.foundation(bytes), "\(String(decoding: bytes, as: UTF8.self))")
        }
    }

    @Test(arguments: [
        // Numbers: integers stay exact; what is not an integer becomes a Double.
        "0", "-0", "12", "-12", "9223372036854775807", "-9223372036854775808", "9223372036854775808",
        "99999999999999999999", "1.0", "1.5", "1e3", "1E+3", "-2.5e-3", "1e400", "01", "-", "1.", ".5", "+1", "1e",
        "0x10", "NaN", "Infinity",
        // Strings: escapes, surrogate pairs, and what JSON forbids in them.
        #""plain""#, #""\"\\\/\b\f\n\r\t""#, #""\u00e9\u4e2d""#, #""\ud83d\ude00""#, #""\ud83d""#, #""\ude00""#,
        #""\ud83dx""#, #""\u12""#, #""\x""#, "\"tab\there\"", #""unclosed"#, "\"caf\u{e9}\"",
        // Structure.
        "[]", "{}", "[1,2]", "[1,]", "[1, ]", "[,]", "[1,,]", "{\"a\":1,}", "{,}", "{\"a\" 1}", "{1:2}", "[1 2]", " \n\t[ true , false , null ] \r\n",
        "[1] x", "", "   ", "tru", "nul", "{\"a\":1,\"a\":2}",
    ])
    func cornersOfTheGrammar(_ text: String) {
        let bytes = Array(text.utf8)
        #expect(Self.parser(bytes) == Self.foundation(bytes))
    }

    @Test func invalidUTF8InsideAStringIsRefused() {
        for bytes: [UInt8] in [[0x22, 0xFF, 0x22], [0x22, 0xC3, 0x22], [0x22, 0xED, 0xA0, 0x80, 0x22]] {
            #expect(Self.parser(bytes) == nil)
            #expect(Self.foundation(bytes) == nil)
        }
    }

    /// Of a repeated key the first wins, as Apple's answers are read; at the API's edge it is refused,
    /// at any depth.
    @Test func aRepeatedKeyWinsFirstUnlessRefused() throws {
        let repeated = Array(#"{"a": {"b": 1, "b": 2}, "c": 3}"#.utf8)
        #expect(try JSONValue.parse(repeated)["a"]?["b"] == .integer(1))
        #expect(throws: (any Error).self) { try JSONValue.parse(repeated, refusingRepeatedKeys: true) }
        #expect(try JSONValue.parse(Array(#"{"a": {"b": 1}, "b": 2}"#.utf8), refusingRepeatedKeys: true)["b"] == .integer(2),
                "the same key in two objects is no repetition")
    }

    /// The one difference, on purpose: JSON on the network is UTF-8 (RFC 8259 §8.1).
    @Test func utf8Only() {
        let utf16 = Array("[1]".utf16.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] })
        #expect(Self.foundation(utf16) == .array([.integer(1)]))
        #expect(Self.parser(utf16) == nil)
    }

    @Test func nestingStopsAt512Levels() {
        func nested(_ depth: Int) -> [UInt8] { Array(String(repeating: "[", count: depth).utf8) + Array(String(repeating: "]", count: depth).utf8) }
        #expect(Self.parser(nested(JSONParser.maximumDepth)) != nil)
        #expect(Self.parser(nested(JSONParser.maximumDepth + 1)) == nil)
        #expect(Self.parser(nested(100_000)) == nil, "refused, not a stack overflow")
    }
}
