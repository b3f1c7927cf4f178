import AppStore
import Foundation
import PropertyBased
import Testing

/// Whatever Apple (or anything in between) sends, reading and analysing it never traps: the
/// answer is a response or a `ResponseDecodingError`, and a response always analyses or throws.
@Suite struct MutationTests {
    /// One change to a document: at the `target`-th node (pre-order), do `kind`.
    struct Mutation: Sendable, CustomStringConvertible {
        let kind: Int
        let target: Int
        let replacement: Int
        var description: String { "kind \(kind) at node \(target) with \(replacement)" }
    }

    /// Values of every JSON type, including spellings that look like dates, flags and ids.
    static let replacements: [JSONValue] = [
        .null, .bool(true), .bool(false), .integer(0), .integer(1), .integer(-1), .integer(.max), .integer(.min),
        .number(1.5), .number(-1e300), .number(1e300), .string(""), .string("1"), .string("true"), .string("0"),
        .string("garbage"), .string("1489195343000"), .string("-99999999999999999999"), .string("2017-03-11 01:22:23 Etc/GMT"),
        .string("9999-12-31 23:59:59 Etc/GMT"), .string("0000-00-00 00:00:00 Mars/Olympus"), .string("21007"),
        .array([]), .array([.object([:])]), .object([:]),
        .object(["transaction_id": .string("1"), "original_transaction_id": .integer(1)]),
    ]

    static let mutation = zip(Gen.int(in: 0...5), Gen.int(in: 0...100_000), Gen.int(in: 0...1000))
        .map { Mutation(kind: $0, target: $1, replacement: $2) }

    /// A byte-level change after re-encoding, for three runs in ten: truncation, inserted garbage
    /// or a flipped byte. The other seven reach the analysis with a readable body.
    static let byteDamage = zip(Gen.int(in: 0...9), Gen.int(in: 0...100_000), Gen.uint8().array(of: 1...8))

    /// Keys sorted, so that a seed names the same bytes in every run and a failure reproduces.
    static let encoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return encoder
    }()

    static let documents: [JSONValue] = Fixture.allCases.compactMap { try? JSONValue.parse($0.bytes()) }

    @Test func fixturesParseAsDocuments() {
        #expect(Self.documents.count == Fixture.allCases.count)
    }

    @Test func mutatedFixturesNeverTrap() async throws {
        let documents = Self.documents
        await propertyCheck(
            count: 500, input: Gen.int(in: 0...(documents.count - 1)), Self.mutation.array(of: 1...6), Self.byteDamage
        ) { index, mutations, damage in
            var document = documents[index]
            for mutation in mutations { document = Self.apply(mutation, to: document) }
            var bytes = Array(try Self.encoder.encode(document))
            Self.damage(&bytes, kind: damage.0, at: damage.1, with: damage.2)
            try Self.readAndAnalyse(bytes, original: documents[index])
        }
    }

    @Test func arbitraryBytesNeverTrap() async throws {
        await propertyCheck(count: 300, input: Gen.uint8().array(of: 0...300)) { bytes in
            try Self.readAndAnalyse(bytes, original: nil)
        }
    }

    /// Reads `bytes`; a response must read the same twice and analyse (or refuse to) for every
    /// subscription it holds, from nothing and on top of the state its unmutated fixture gives.
    static func readAndAnalyse(_ bytes: [UInt8], original: JSONValue?) throws {
        let now = Date(timeIntervalSince1970: 1_600_000_000)
        let response: VerifyReceiptResponse
        do {
            response = try VerifyReceiptResponse(body: bytes, httpStatus: 200)
        } catch {
            #expect(error.httpStatus == 200)
            #expect(error.bodyPrefix.unicodeScalars.count <= ResponseDecodingError.bodyPrefixLength * 6)
            return
        }
        #expect(try VerifyReceiptResponse(body: bytes, httpStatus: 200) == response)
        let originalResponse = try original.map { try VerifyReceiptResponse(body: encoder.encode($0), httpStatus: 200) }
        for id in Set(response.allTransactions.map(\.originalTransactionID) + ["absent"]) {
            let stored = try? SubscriptionAnalyzer.analyze(
                stored: nil, response: originalResponse ?? response, originalTransactionID: id,
                now: now.addingTimeInterval(-86_400)
            ).state
            for previous in [nil, stored] {
                guard let analysis = try? SubscriptionAnalyzer.analyze(
                    stored: previous, response: response, originalTransactionID: id, now: now, products: Scenario.catalog)
                else { continue }
                #expect(analysis.state.originalTransactionID == id)
                #expect(analysis.transactions.allSatisfy { $0.originalTransactionID == id })
                if previous == nil { #expect(analysis.events.isEmpty) }
            }
        }
    }

    static func apply(_ mutation: Mutation, to document: JSONValue) -> JSONValue {
        let transform = { (node: JSONValue) -> JSONValue? in
            switch mutation.kind {
            case 0: return nil  // drop it
            case 1: return .array([node])  // an array where an object was, or nested deeper
            case 2:  // an array's first element in its place: an object where an array was
                guard case .array(let elements) = node else { return node }
                return elements.first ?? .null
            case 3:  // every element twice: repeated transactions
                guard case .array(let elements) = node else { return node }
                return .array(elements + elements)
            default: return replacements[mutation.replacement % replacements.count]
            }
        }
        var counter = 0
        let target = mutation.target % nodeCount(document)
        return rewrite(document, target: target, transform: transform, counter: &counter) ?? .null
    }

    static func nodeCount(_ value: JSONValue) -> Int {
        switch value {
        case .array(let elements): 1 + elements.map(nodeCount).reduce(0, +)
        case .object(let members): 1 + members.values.map(nodeCount).reduce(0, +)
        default: 1
        }
    }

    /// `value` with the `target`-th node (pre-order) transformed; a nil transform drops it.
    static func rewrite(
        _ value: JSONValue, target: Int, transform: (JSONValue) -> JSONValue?, counter: inout Int
    ) -> JSONValue? {
        let number = counter
        counter += 1
        if number == target { return transform(value) }
        switch value {
        case .array(let elements):
            return .array(elements.compactMap { rewrite($0, target: target, transform: transform, counter: &counter) })
        case .object(let members):
            var kept: [String: JSONValue] = [:]
            for key in members.keys.sorted() {
                kept[key] = rewrite(members[key]!, target: target, transform: transform, counter: &counter)
            }
            return .object(kept)
        default:
            return value
        }
    }

    static func damage(_ bytes: inout [UInt8], kind: Int, at position: Int, with garbage: [UInt8]) {
        guard !bytes.isEmpty else { return }
        let index = position % bytes.count
        switch kind {
        case 7: bytes.removeSubrange(index...)
        case 8: bytes.insert(contentsOf: garbage, at: index)
        case 9: bytes[index] ^= garbage[0] | 1
        default: break
        }
    }
}
