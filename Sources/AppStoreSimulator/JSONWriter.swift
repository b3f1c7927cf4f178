/// Builds JSON bytes directly, without intermediate objects: the simulator's answers have a fixed
/// shape, and writing them by hand is what lets one core serve thousands of them a second.
///
/// Every value is followed by a comma; closing a container or finishing swaps the last comma for the
/// closing bracket, so callers never track "first field" state.
struct JSONWriter {
    private(set) var bytes: [UInt8] = []

    init(capacity: Int = 4096) {
        bytes.reserveCapacity(capacity)
    }

    mutating func beginObject(_ name: StaticString? = nil) {
        if let name { key(name) }
        bytes.append(UInt8(ascii: "{"))
    }

    mutating func endObject() { close(UInt8(ascii: "}")) }

    mutating func beginArray(_ name: StaticString) {
        key(name)
        bytes.append(UInt8(ascii: "["))
    }

    mutating func endArray() { close(UInt8(ascii: "]")) }

    /// `"name":"value"`; escapes what JSON requires. Nothing when `value` is nil: Apple leaves such a
    /// field out (as for `numberString` and `date`).
    mutating func string(_ name: StaticString, _ value: String?) {
        guard let value else { return }
        key(name)
        quoted(value)
        comma()
    }

    /// `"name":123`, a JSON number (Apple sends a few ids this way, e.g. `adam_id`).
    mutating func number(_ name: StaticString, _ value: Int64) {
        key(name)
        digits(UInt64(value))
        comma()
    }

    /// `"name":"123"`: Apple sends most numbers as strings.
    mutating func numberString<Number: BinaryInteger>(_ name: StaticString, _ value: Number?) {
        guard let value else { return }
        key(name)
        bytes.append(UInt8(ascii: "\""))
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        digits(UInt64(value.magnitude))
        bytes.append(UInt8(ascii: "\""))
        comma()
    }

    /// `"name":"true"` or `"false"`, as Apple spells booleans.
    mutating func boolString(_ name: StaticString, _ value: Bool) {
        key(name)
        append(value ? "\"true\"" : "\"false\"")
        comma()
    }

    /// A string element of an array.
    mutating func element(_ value: String) {
        quoted(value)
        comma()
    }

    /// `"name":true` or `false`, a JSON boolean (as the Server API's signed payloads write them).
    mutating func bool(_ name: StaticString, _ value: Bool) {
        key(name)
        append(value ? "true" : "false")
        comma()
    }

    /// Apple's three spellings of one moment: `name` (GMT), `name_ms`, `name_pst` (Pacific time).
    mutating func date(_ name: StaticString, _ milliseconds: Int64?) {
        guard let milliseconds else { return }
        key(name)
        bytes.append(UInt8(ascii: "\""))
        AppleDate.appendGMT(milliseconds, to: &bytes)
        bytes.append(UInt8(ascii: "\""))
        comma()
        key(name, suffix: "_ms")
        bytes.append(UInt8(ascii: "\""))
        digits(UInt64(max(0, milliseconds)))
        bytes.append(UInt8(ascii: "\""))
        comma()
        key(name, suffix: "_pst")
        bytes.append(UInt8(ascii: "\""))
        AppleDate.appendPacific(milliseconds, to: &bytes)
        bytes.append(UInt8(ascii: "\""))
        comma()
    }

    /// The document, without the trailing comma.
    mutating func finish() -> [UInt8] {
        if bytes.last == UInt8(ascii: ",") { bytes.removeLast() }
        return bytes
    }

    private mutating func key(_ name: StaticString, suffix: StaticString = "") {
        bytes.append(UInt8(ascii: "\""))
        append(name)
        append(suffix)
        bytes.append(UInt8(ascii: "\""))
        bytes.append(UInt8(ascii: ":"))
    }

    private mutating func close(_ bracket: UInt8) {
        if bytes.last == UInt8(ascii: ",") { bytes.removeLast() }
        bytes.append(bracket)
        comma()
    }

    private mutating func comma() { bytes.append(UInt8(ascii: ",")) }

    private mutating func append(_ text: StaticString) {
        text.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    private mutating func quoted(_ value: String) {
        bytes.append(UInt8(ascii: "\""))
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"):
                bytes.append(UInt8(ascii: "\\"))
                bytes.append(byte)
            case 0..<0x20:
                append("\\u00")
                bytes.append(Self.hex[Int(byte >> 4)])
                bytes.append(Self.hex[Int(byte & 0xF)])
            default:
                bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    private mutating func digits(_ value: UInt64) {
        AppleDate.appendDigits(value, minimumWidth: 1, to: &bytes)
    }

    private static let hex = Array("0123456789abcdef".utf8)
}
