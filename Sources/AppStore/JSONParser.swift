/// A strict RFC 8259 reader from bytes straight into `JSONValue`.
///
/// It exists for speed: Foundation's `JSONDecoder` reached `JSONValue` through Codable's generic
/// machinery, which cost a third of a worker's CPU per verification (docs/performance.md). It
/// accepts what Foundation accepted, value for value (JSONParserTests compares the two on damaged
/// documents): no comments, no leading zeros, no NaN, nesting up to 512 levels; a trailing comma
/// is forgiven, and of a repeated key the first wins, unless the caller refuses repeated keys (a
/// request at the API's edge, where two readers could take two different values). Unlike Foundation it reads UTF-8 only, as
/// RFC 8259 requires of JSON on the network, and never guesses UTF-16 or UTF-32 from zero bytes.
struct JSONParser: ~Copyable {
    struct Failure: Error, CustomStringConvertible {
        let offset: Int
        let problem: String
        var description: String { "not JSON at byte \(offset): \(problem)" }
    }

    /// Deeper documents are refused, so that no input can exhaust the stack.
    static let maximumDepth = 512

    private let bytes: UnsafeBufferPointer<UInt8>
    private let refusingRepeatedKeys: Bool
    private var position = 0
    private var depth = 0

    private init(_ bytes: UnsafeBufferPointer<UInt8>, refusingRepeatedKeys: Bool) {
        self.bytes = bytes
        self.refusingRepeatedKeys = refusingRepeatedKeys
    }

    static func parse(_ bytes: UnsafeBufferPointer<UInt8>, refusingRepeatedKeys: Bool = false) throws(Failure) -> JSONValue {
        var parser = JSONParser(bytes, refusingRepeatedKeys: refusingRepeatedKeys)
        let value = try parser.value()
        parser.skipWhitespace()
        guard parser.position == bytes.count else { throw parser.failure("text after the document") }
        return value
    }

    private mutating func value() throws(Failure) -> JSONValue {
        skipWhitespace()
        guard position < bytes.count else { throw failure("the document ends where a value should be") }
        switch bytes[position] {
        case UInt8(ascii: "{"):
            try descend()
            defer { depth -= 1 }
            return try object()
        case UInt8(ascii: "["):
            try descend()
            defer { depth -= 1 }
            return try array()
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
        default: throw failure("unexpected character")
        }
    }

    private mutating func descend() throws(Failure) {
        guard depth < Self.maximumDepth else { throw failure("nested deeper than \(Self.maximumDepth) levels") }
        depth += 1
    }

    private mutating func object() throws(Failure) -> JSONValue {
        position += 1  // {
        var members: [String: JSONValue] = [:]
        skipWhitespace()
        if consume(UInt8(ascii: "}")) { return .object(members) }
        while true {
            skipWhitespace()
            guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else { throw failure("a key must be a string") }
            let keyOffset = position
            let key = try string()
            skipWhitespace()
            guard consume(UInt8(ascii: ":")) else { throw failure("a key must be followed by ':'") }
            let member = try value()
            if members.index(forKey: key) == nil {
                members[key] = member
            } else if refusingRepeatedKeys {
                throw Failure(offset: keyOffset, problem: "the key \"\(key.prefix(64))\" is given twice in one object")
            }
            if try ends(UInt8(ascii: "}"), "an object") { return .object(members) }
        }
    }

    private mutating func array() throws(Failure) -> JSONValue {
        position += 1  // [
        var elements: [JSONValue] = []
        skipWhitespace()
        if consume(UInt8(ascii: "]")) { return .array(elements) }
        while true {
            elements.append(try value())
            if try ends(UInt8(ascii: "]"), "an array") { return .array(elements) }
        }
    }

    /// After a member of an object or an element of an array: true when `close` ends it (a
    /// trailing comma before it forgiven), false when a ',' is followed by another.
    private mutating func ends(_ close: UInt8, _ container: String) throws(Failure) -> Bool {
        skipWhitespace()
        if consume(UInt8(ascii: ",")) {
            skipWhitespace()
            return consume(close)
        }
        if consume(close) { return true }
        throw failure("expected ',' or '\(Character(Unicode.Scalar(close)))' in \(container)")
    }

    /// A string's contents: a slice of the input when it has no escapes (the usual case), else
    /// decoded byte by byte.
    private mutating func string() throws(Failure) -> String {
        position += 1  // "
        let start = position
        while position < bytes.count {
            let byte = bytes[position]
            if byte == UInt8(ascii: "\"") {
                defer { position += 1 }
                return try text(UnsafeBufferPointer(rebasing: bytes[start..<position]))
            }
            if byte == UInt8(ascii: "\\") { return try escapedString(from: start) }
            guard byte >= 0x20 else { throw failure("a control character inside a string") }
            position += 1
        }
        throw failure("a string is not closed")
    }

    private mutating func escapedString(from start: Int) throws(Failure) -> String {
        var utf8 = Array(bytes[start..<position])
        while position < bytes.count {
            let byte = bytes[position]
            position += 1
            switch byte {
            case UInt8(ascii: "\""): return try text(utf8)
            case UInt8(ascii: "\\"):
                guard position < bytes.count else { throw failure("a string is not closed") }
                let escape = bytes[position]
                position += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): utf8.append(escape)
                case UInt8(ascii: "b"): utf8.append(0x08)
                case UInt8(ascii: "f"): utf8.append(0x0C)
                case UInt8(ascii: "n"): utf8.append(0x0A)
                case UInt8(ascii: "r"): utf8.append(0x0D)
                case UInt8(ascii: "t"): utf8.append(0x09)
                case UInt8(ascii: "u"): utf8.append(contentsOf: try unicodeEscape())
                default: throw failure("an unknown escape")
                }
            case 0..<0x20: throw failure("a control character inside a string")
            default: utf8.append(byte)
            }
        }
        throw failure("a string is not closed")
    }

    /// `\uXXXX`, or a surrogate pair of two, as UTF-8. A lone surrogate is an error.
    private mutating func unicodeEscape() throws(Failure) -> String.UTF8View {
        let first = try hexQuad()
        var scalar = Unicode.Scalar(first)
        if (0xD800..<0xDC00).contains(first) {
            guard position + 1 < bytes.count, bytes[position] == UInt8(ascii: "\\"), bytes[position + 1] == UInt8(ascii: "u")
            else { throw failure("a high surrogate without its low one") }
            position += 2
            let second = try hexQuad()
            guard (0xDC00..<0xE000).contains(second) else { throw failure("a high surrogate without its low one") }
            scalar = Unicode.Scalar(0x10000 + ((UInt32(first) - 0xD800) << 10) + (UInt32(second) - 0xDC00))
        }
        guard let scalar else { throw failure("a low surrogate without its high one") }
        return String(Character(scalar)).utf8
    }

    private mutating func hexQuad() throws(Failure) -> UInt16 {
        guard position + 4 <= bytes.count else { throw failure("a \\u escape needs four hex digits") }
        var value: UInt16 = 0
        for _ in 0..<4 {
            let byte = bytes[position]
            let digit: UInt8 = switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
            default: throw failure("a \\u escape needs four hex digits")
            }
            value = value << 4 | UInt16(digit)
            position += 1
        }
        return value
    }

    private func text(_ utf8: some Collection<UInt8>) throws(Failure) -> String {
        guard let text = String(validating: utf8, as: UTF8.self) else { throw failure("a string is not valid UTF-8") }
        return text
    }

    /// An integer when the number is one that fits in 64 bits ("1e3" and "1.0" too, as Foundation
    /// read them); otherwise a finite Double.
    private mutating func number() throws(Failure) -> JSONValue {
        let start = position
        let negative = bytes[position] == UInt8(ascii: "-")
        if negative { position += 1 }
        let integerStart = position
        guard digits() > 0 else { throw failure("a number needs digits") }
        if bytes[integerStart] == UInt8(ascii: "0"), position - integerStart > 1 { throw failure("a number with a leading zero") }
        var integral = true
        if position < bytes.count, bytes[position] == UInt8(ascii: ".") {
            position += 1
            integral = false
            guard digits() > 0 else { throw failure("a fraction needs digits") }
        }
        if position < bytes.count, bytes[position] | 0x20 == UInt8(ascii: "e") {
            position += 1
            integral = false
            if position < bytes.count, bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-") { position += 1 }
            guard digits() > 0 else { throw failure("an exponent needs digits") }
        }
        let literal = UnsafeBufferPointer(rebasing: bytes[start..<position])
        if integral, let integer = Self.integer(literal, negative: negative) { return .integer(integer) }
        guard let double = Double(String(decoding: literal, as: UTF8.self)), double.isFinite else {
            throw failure("a number too large for a Double")
        }
        if !integral, let integer = Int64(exactly: double) { return .integer(integer) }
        return .number(double)
    }

    /// The literal's value, or nil when it overflows 64 bits.
    private static func integer(_ literal: UnsafeBufferPointer<UInt8>, negative: Bool) -> Int64? {
        var value: Int64 = 0
        for byte in literal.dropFirst(negative ? 1 : 0) {
            let digit = Int64(byte - UInt8(ascii: "0"))
            let (shifted, overflowed) = value.multipliedReportingOverflow(by: 10)
            let (next, overflowedAgain) = negative ? shifted.subtractingReportingOverflow(digit) : shifted.addingReportingOverflow(digit)
            guard !overflowed, !overflowedAgain else { return nil }
            value = next
        }
        return value
    }

    private mutating func digits() -> Int {
        let start = position
        while position < bytes.count, bytes[position] &- UInt8(ascii: "0") < 10 { position += 1 }
        return position - start
    }

    private mutating func literal(_ word: StaticString) throws(Failure) {
        let count = word.utf8CodeUnitCount
        guard position + count <= bytes.count,
              UnsafeBufferPointer(rebasing: bytes[position..<position + count]).elementsEqual(
                UnsafeBufferPointer(start: word.utf8Start, count: count))
        else { throw failure("unexpected character") }
        position += count
    }

    private mutating func consume(_ byte: UInt8) -> Bool {
        guard position < bytes.count, bytes[position] == byte else { return false }
        position += 1
        return true
    }

    private mutating func skipWhitespace() {
        while position < bytes.count {
            switch bytes[position] {
            case 0x20, 0x0A, 0x0D, 0x09: position += 1
            default: return
            }
        }
    }

    private func failure(_ problem: String) -> Failure { Failure(offset: position, problem: problem) }
}
