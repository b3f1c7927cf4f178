import Foundation

/// Any JSON value, as read from a verifyReceipt body or written into an event payload.
///
/// Integers are kept apart from other numbers so that ids and millisecond dates sent as JSON
/// numbers stay exact.
public enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    case integer(Int64)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    /// The member named `key` when this is an object; nil otherwise.
    public subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members[key]
    }

    /// The members when this is an object; nil otherwise.
    public var members: [String: JSONValue]? {
        guard case .object(let members) = self else { return nil }
        return members
    }

    /// Reads one JSON document. Throws when the bytes are not JSON, or nest deeper than 512
    /// levels (so no input can exhaust the stack). Of a key repeated in one object the first
    /// wins, as Apple's answers are read; `refusingRepeatedKeys` throws instead (a request at the
    /// API's edge).
    public static func parse(_ bytes: some Collection<UInt8>, refusingRepeatedKeys: Bool = false) throws -> JSONValue {
        if let value = try bytes.withContiguousStorageIfAvailable({ try JSONParser.parse($0, refusingRepeatedKeys: refusingRepeatedKeys) }) {
            return value
        }
        return try Array(bytes).withUnsafeBufferPointer { try JSONParser.parse($0, refusingRepeatedKeys: refusingRepeatedKeys) }
    }
}

extension JSONValue: Codable {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        // The order matters: a Bool never decodes from a number, an Int64 only from an exact
        // integer, and everything else that is a number falls through to Double.
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .integer(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .integer(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }
}

// Building payloads: an absent value is written as JSON null, so every payload of one event
// type has the same keys.
extension JSONValue {
    init(_ value: String?) { self = value.map(JSONValue.string) ?? .null }
    init(_ value: Int?) { self = value.map { .integer(Int64($0)) } ?? .null }
    init(_ value: Bool?) { self = value.map(JSONValue.bool) ?? .null }
    init(_ value: Instant?) { self = value.map { .string($0.description) } ?? .null }
}
