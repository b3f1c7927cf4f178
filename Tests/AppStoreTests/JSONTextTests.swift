@testable import AppStore
import Foundation
import PropertyBased
import Testing

/// The hand-written request body is JSON that says what Foundation's serialization said.
@Suite struct JSONTextTests {
    /// Quotes, backslashes, every control character, slashes and text beyond ASCII.
    static let alphabet: [Unicode.Scalar] = (0..<0x20).map { Unicode.Scalar(UInt8($0)) }
        + Array("\"\\/ aZ09+=é中😀\u{7F}\u{2028}".unicodeScalars)

    @Test func anyTextReadsBackUnchanged() async throws {
        await propertyCheck(count: 1_000, input: Gen.int(in: 0...(Self.alphabet.count - 1)).array(of: 0...40)) { (picks: [Int]) throws in
            var text = ""
            text.unicodeScalars.append(contentsOf: picks.map { Self.alphabet[$0] })
            var json: [UInt8] = []
            JSONText.appendString(text, to: &json)
            #expect(try JSONValue.parse(json) == .string(text))
            #expect(try JSONDecoder().decode(String.self, from: Data(json)) == text)
        }
    }

    @Test(arguments: [true, false])
    func aVerifyReceiptRequestCarriesItsThreeFields(excludeOld: Bool) throws {
        let secret = SharedSecret("a\"b\\c\n")
        let receipt = ReceiptData(base64: "MIIT+/w==")
        let body = VerifyReceiptRequest.body(receipt, secret, excludeOld)
        let fields = try #require(JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])
        #expect(fields.count == 3)
        #expect(fields["receipt-data"] as? String == "MIIT+/w==")
        #expect(fields["password"] as? String == "a\"b\\c\n")
        #expect(fields["exclude-old-transactions"] as? Bool == excludeOld)
        let withoutSecret = try #require(JSONSerialization.jsonObject(with: Data(VerifyReceiptRequest.body(receipt, nil, excludeOld))) as? [String: Any])
        #expect(Set(withoutSecret.keys) == ["receipt-data", "exclude-old-transactions"])
    }
}
