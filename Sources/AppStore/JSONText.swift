/// Writing JSON text by hand where it is on every verification's path: Foundation's
/// `JSONSerialization` spent 7% of a worker's CPU on the three fields of a verifyReceipt request,
/// and the ledger's write batch is encoded with it too (`JSONStreamEncoder`).
public enum JSONText {
    /// Appends `text` as a JSON string, quotes included, escaping what RFC 8259 requires. The runs
    /// between escapes are copied whole: a receipt is kilobytes of base64 with nothing to escape.
    public static func appendString(_ text: String, to json: inout [UInt8]) {
        json.append(UInt8(ascii: "\""))
        var text = text
        text.withUTF8 { bytes in
            var run = bytes.startIndex  // the first byte not copied yet
            for index in bytes.indices where needsEscape(bytes[index]) {
                json.append(contentsOf: bytes[run..<index])
                appendEscaped(bytes[index], to: &json)
                run = index + 1
            }
            json.append(contentsOf: bytes[run...])
        }
        json.append(UInt8(ascii: "\""))
    }

    private static func needsEscape(_ byte: UInt8) -> Bool {
        byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\")
    }

    private static func appendEscaped(_ byte: UInt8, to json: inout [UInt8]) {
        switch byte {
        case 0x0A: json += Array(#"\n"#.utf8)
        case 0x0D: json += Array(#"\r"#.utf8)
        case 0x09: json += Array(#"\t"#.utf8)
        case 0..<0x20:
            let hex = Array("0123456789abcdef".utf8)
            json += Array(#"\u00"#.utf8) + [hex[Int(byte >> 4)], hex[Int(byte & 0xF)]]
        default: json += [UInt8(ascii: "\\"), byte]  // a quote or a backslash
        }
    }
}
