import Foundation

/// A statement parameter. It travels to the server apart from the SQL text (`$1`, `$2`…), so it is
/// never parsed as SQL, whatever it contains.
///
///     try connection.execute("INSERT INTO users (name, age) VALUES ($1, $2)", [.text(name), .int64(age)])
///     try connection.query("SELECT * FROM users WHERE name = $1", ["O'Brien"])
public enum PostgresValue: Sendable, Equatable {
    /// Sent with no declared type, so the server reads it as whatever the context wants: text,
    /// varchar, uuid, an enum…
    case text(String)
    /// `bigint`. To pass one where `integer` is required (a function argument), cast: `$1::integer`.
    case int64(Int64)
    case bool(Bool)
    /// `double precision`, including infinities and NaN.
    case double(Double)
    /// `timestamptz`, to the microsecond, for the years 1 to 9999.
    case timestamptz(Date)
    /// `jsonb`, as UTF-8 JSON text (what `JSONEncoder` produces).
    case jsonb(Data)
    /// `bytea`, sent in binary, so any byte (NUL, 0xFF) arrives as is.
    case bytea(Data)
    case null
}

extension PostgresValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByFloatLiteral, ExpressibleByNilLiteral
{
    public init(stringLiteral value: String) { self = .text(value) }
    public init(integerLiteral value: Int64) { self = .int64(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(nilLiteral: ()) { self = .null }
}

/// Parameters laid out the way `PQexecParams` takes them.
struct EncodedParameters {
    /// Type OIDs; 0 lets the server infer the type.
    var types: [UInt32] = []
    /// Every non-null value, each followed by a NUL byte (text values need it; binary ones ignore it,
    /// and it keeps an empty bytea from looking like NULL).
    var bytes: [UInt8] = []
    /// Where each value starts in `bytes`; nil for NULL.
    var offsets: [Int?] = []
    var lengths: [Int32] = []
    /// 0 for text, 1 for binary.
    var formats: [Int32] = []

    /// `body` with a pointer to each value (nil for NULL), valid only while it runs: what libpq's
    /// `paramValues` takes.
    func withValues<T>(_ body: ([UnsafePointer<CChar>?]) -> T) -> T {
        bytes.withUnsafeBufferPointer { buffer in
            body(offsets.map { offset in
                offset.map { UnsafeRawPointer(buffer.baseAddress! + $0).assumingMemoryBound(to: CChar.self) }
            })
        }
    }

    init(_ values: [PostgresValue]) throws {
        for (index, value) in values.enumerated() {
            switch value {
            case .text(let string): try appendText(string, type: 0, index: index)
            case .int64(let number): try appendText(String(number), type: PostgresType.int8, index: index)
            case .bool(let flag): try appendText(flag ? "t" : "f", type: PostgresType.bool, index: index)
            case .double(let number): try appendText(Self.text(number), type: PostgresType.float8, index: index)
            case .timestamptz(let date):
                try appendText(PostgresTimestamp.text(date), type: PostgresType.timestamptz, index: index)
            case .jsonb(let json):
                try appendText(String(decoding: json, as: UTF8.self), type: PostgresType.jsonb, index: index)
            case .bytea(let data): append(data, type: PostgresType.bytea, format: 1)
            case .null:
                types.append(0)
                offsets.append(nil)
                lengths.append(0)
                formats.append(0)
            }
        }
    }

    private mutating func appendText(_ text: String, type: UInt32, index: Int) throws {
        var text = text
        // libpq reads text parameters up to the first NUL; PostgreSQL text cannot hold one anyway.
        // Searched with memchr and copied once: a receipt or a state is kilobytes, on every write.
        guard !text.withUTF8({ $0.count > 0 && memchr($0.baseAddress!, 0, $0.count) != nil }) else {
            throw PostgresError(
                kind: .misuse,
                message: "parameter $\(index + 1) contains a NUL byte, which PostgreSQL text cannot store; "
                    + "send binary data as .bytea")
        }
        text.withUTF8 { append($0, type: type, format: 0) }
    }

    private mutating func append(_ value: some Collection<UInt8>, type: UInt32, format: Int32) {
        types.append(type)
        offsets.append(bytes.count)
        lengths.append(Int32(value.count))
        formats.append(format)
        bytes += value
        bytes.append(0)
    }

    /// The spellings PostgreSQL's float8 input accepts; finite values use Swift's shortest exact form.
    private static func text(_ number: Double) -> String {
        if number.isNaN { return "NaN" }
        if number.isInfinite { return number < 0 ? "-Infinity" : "Infinity" }
        return String(number)
    }
}

/// The type OIDs this client sends and decodes (from PostgreSQL's pg_type catalog; they never change).
enum PostgresType {
    static let bool: UInt32 = 16
    static let bytea: UInt32 = 17
    static let int8: UInt32 = 20
    static let int2: UInt32 = 21
    static let int4: UInt32 = 23
    static let json: UInt32 = 114
    static let float4: UInt32 = 700
    static let float8: UInt32 = 701
    static let timestamptz: UInt32 = 1184
    static let jsonb: UInt32 = 3802

    /// A name for error messages.
    static func name(_ oid: UInt32) -> String {
        let names: [UInt32: String] = [
            bool: "boolean", bytea: "bytea", int8: "bigint", int2: "smallint", int4: "integer", 25: "text",
            json: "json", float4: "real", float8: "double precision", 1043: "varchar", 1114: "timestamp",
            timestamptz: "timestamptz", jsonb: "jsonb", 1700: "numeric", 2950: "uuid",
        ]
        return names[oid] ?? "type OID \(oid)"
    }
}
