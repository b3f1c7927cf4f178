/// Writing JSON text by hand where it is on every verification's path: Foundation's
/// `JSONSerialization` spent 7% of a worker's CPU on the three fields of a verifyReceipt request,
/// and the ledger's write batch is encoded with it too (`JSONStreamEncoder`).
public enum JSONText {
    /// Appends `text` as a JSON string, quotes included, escaping what RFC 8259 requires.
    public static func appendString(_ text: String, to json: inout [UInt8]) {
        json.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"): json += [UInt8(ascii: "\\"), byte]
            case 0x0A: json += Array(#"\n"#.utf8)
            case 0x0D: json += Array(#"\r"#.utf8)
            case 0x09: json += Array(#"\t"#.utf8)
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                json += Array(#"\u00"#.utf8) + [hex[Int(byte >> 4)], hex[Int(byte & 0xF)]]
            default: json.append(byte)
            }
        }
        json.append(UInt8(ascii: "\""))
    }
}
