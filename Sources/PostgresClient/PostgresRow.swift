import Foundation

/// One row of a result. Read a column by name or position, then ask for the type you expect:
///
///     let id = try row["id"].int64()          // Int64?  (nil when NULL)
///     let name = try row[1].text()            // String?
///
/// A missing column, or a column of another type, throws an error naming the column.
public struct PostgresRow: Sendable {
    let columns: PostgresColumns
    /// Each value in the server's text form; nil for NULL.
    let values: [String?]

    /// The column names, in order.
    public var columnNames: [String] { columns.names }

    /// The column called `name` (the first, if several share it).
    public subscript(name: String) -> PostgresCell {
        get throws {
            guard let index = columns.names.firstIndex(of: name) else {
                let names = columns.names.map { "\"\($0)\"" }.joined(separator: ", ")
                throw PostgresError(kind: .decoding, message: "no column named \"\(name)\"; the result has \(names)")
            }
            return try self[index]
        }
    }

    /// The column at `index`, counting from 0.
    public subscript(index: Int) -> PostgresCell {
        get throws {
            guard columns.names.indices.contains(index) else {
                throw PostgresError(
                    kind: .decoding,
                    message: "no column at index \(index); the result has \(columns.names.count) columns")
            }
            return PostgresCell(column: columns.names[index], type: columns.types[index], value: values[index])
        }
    }
}

/// The names and type OIDs of a result's columns, shared by its rows.
struct PostgresColumns: Sendable {
    var names: [String]
    var types: [UInt32]
}

/// One value of a row. Each reader returns nil for NULL and throws when the column's type is not one
/// it reads, or the value does not fit.
public struct PostgresCell: Sendable {
    /// The column's name, for error messages.
    public let column: String
    let type: UInt32
    let value: String?

    public var isNull: Bool { value == nil }

    /// The server's text form of any type: text and varchar as they are, but also numeric, uuid, enums…
    public func text() -> String? { value }

    /// bigint, integer or smallint.
    public func int64() throws -> Int64? {
        try read([PostgresType.int8, PostgresType.int4, PostgresType.int2], by: "int64()") { Int64($0) }
    }

    public func bool() throws -> Bool? {
        try read([PostgresType.bool], by: "bool()") { ["t": true, "f": false][$0] }
    }

    /// double precision or real.
    public func double() throws -> Double? {
        try read([PostgresType.float8, PostgresType.float4], by: "double()") { Double($0) }
    }

    /// timestamptz, to the microsecond.
    public func timestamptz() throws -> Date? {
        try read([PostgresType.timestamptz], by: "timestamptz()", PostgresTimestamp.date)
    }

    /// jsonb or json, as UTF-8 JSON text (what `JSONDecoder` reads).
    public func jsonb() throws -> Data? {
        try read([PostgresType.jsonb, PostgresType.json], by: "jsonb()") { Data($0.utf8) }
    }

    /// bytea, decoded from the server's `\x` hex form.
    public func bytea() throws -> Data? {
        try read([PostgresType.bytea], by: "bytea()", Self.hexBytes)
    }

    /// Checks the column's type, then converts; the value itself never appears in the error, as it may be secret.
    private func read<T>(_ types: [UInt32], by reader: String, _ convert: (String) -> T?) throws -> T? {
        guard types.contains(type) else {
            let readable = types.map(PostgresType.name).joined(separator: " or ")
            throw PostgresError(
                kind: .decoding,
                message: "column \"\(column)\" is \(PostgresType.name(type)), but \(reader) reads \(readable); "
                    + "read it with the matching reader or cast it in the SQL")
        }
        guard let value else { return nil }
        guard let converted = convert(value) else {
            throw PostgresError(
                kind: .decoding,
                message: "column \"\(column)\" (\(PostgresType.name(type))) holds a value \(reader) cannot represent")
        }
        return converted
    }

    private static func hexBytes(_ text: String) -> Data? {
        let hex = Array(text.utf8)
        guard hex.count % 2 == 0, hex.starts(with: Array(#"\x"#.utf8)) else { return nil }
        var bytes = Data(capacity: hex.count / 2 - 1)
        for index in stride(from: 2, to: hex.count, by: 2) {
            guard let high = nibble(hex[index]), let low = nibble(hex[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
        }
        return bytes
    }

    private static func nibble(_ character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): character - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): character - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): character - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
