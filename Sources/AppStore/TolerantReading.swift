// Apple documents most fields as strings but sends numbers and booleans too ("1", 1, true;
// "1489195343000" or 1489195343000). These readers accept every spelling of one fact and answer
// nil for anything else, so a surprising value is a missing field, never a failure.

extension JSONValue {
    /// A string, or an integer written as its decimal digits (ids sometimes arrive as numbers).
    /// Empty strings read as nil: an empty id identifies nothing.
    public var text: String? {
        switch self {
        case .string(let value): value.isEmpty ? nil : value
        case .integer(let value): String(value)
        case .number(let value): Int64(exactly: value).map { String($0) }
        default: nil
        }
    }

    /// An integer from a JSON integer, an integral number, or a string of digits.
    var int64: Int64? {
        switch self {
        case .integer(let value): value
        case .number(let value): Int64(exactly: value)
        case .string(let value):
            Int64(value.trimmed) ?? Double(value.trimmed).flatMap { Int64(exactly: $0) }
        default: nil
        }
    }

    var int: Int? { int64.flatMap { Int(exactly: $0) } }

    /// A flag from true/false, 1/0, or the strings "1", "0", "true", "false" (any case).
    var flag: Bool? {
        switch self {
        case .bool(let value): value
        case .integer(1): true
        case .integer(0): false
        case .number(let value) where value == 1: true
        case .number(let value) where value == 0: false
        case .string(let value):
            switch value.trimmed.lowercased() {
            case "1", "true": true
            case "0", "false": false
            default: nil
            }
        default: nil
        }
    }
}

extension [String: JSONValue] {
    public func text(_ key: String) -> String? { self[key]?.text }
    func int(_ key: String) -> Int? { self[key]?.int }
    func flag(_ key: String) -> Bool? { self[key]?.flag }

    /// The first of `keys` that reads as text (for fields spelled two ways).
    func text(anyOf keys: String...) -> String? { keys.lazy.compactMap { self.text($0) }.first }

    /// The date named `name`: `name_ms` first, then `name` itself (milliseconds in iOS 6
    /// receipts, a formatted date elsewhere), then iOS 6's `name_formatted`. `name_pst` is never
    /// read: it is the same instant in a less precise spelling.
    func instant(_ name: String) -> Instant? {
        if let millis = self[name + "_ms"]?.int64 { return Instant(millisecondsSince1970: millis) }
        if let value = self[name] {
            if let millis = value.int64 { return Instant(millisecondsSince1970: millis) }
            if case .string(let formatted) = value { return Instant(appleFormatted: formatted) }
        }
        if case .string(let formatted)? = self[name + "_formatted"] {
            return Instant(appleFormatted: formatted)
        }
        return nil
    }
}

extension JSONValue {
    /// The objects in a field that is an array of objects in iOS 7+ responses and a single
    /// object in iOS 6 ones. Anything else holds no objects.
    var objects: [[String: JSONValue]] {
        switch self {
        case .object(let members): [members]
        case .array(let elements):
            elements.compactMap { if case .object(let members) = $0 { members } else { nil } }
        default: []
        }
    }
}

extension String {
    var trimmed: Substring {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }
        guard let start = firstIndex(where: { !isSpace($0) }) else { return "" }
        let end = lastIndex(where: { !isSpace($0) })!
        return self[start...end]
    }
}
