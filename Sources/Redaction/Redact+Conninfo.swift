extension Redact {
    /// A libpq connection string (`host=db password='two words'`) with every secret value replaced
    /// by `***`, everything else kept as written.
    ///
    /// Reads values as libpq does: spaces may surround `=`, a quoted value runs to the closing `'`,
    /// and a backslash escapes the next character, inside quotes or not. A string libpq would
    /// refuse is masked too, if anything more widely: `=` may be missing, an unclosed quote runs to
    /// the end.
    public static func conninfo(_ conninfo: String) -> String {
        let text = Array(conninfo.unicodeScalars)
        var shown = String.UnicodeScalarView()
        var position = 0
        while position < text.count {
            let keywordStart = skip(in: text, from: position, while: isSpace)
            let keywordEnd = skip(in: text, from: keywordStart) { !isSpace($0) && $0 != "=" }
            var valueStart = skip(in: text, from: keywordEnd, while: isSpace)
            if valueStart < text.count, text[valueStart] == "=" {
                valueStart = skip(in: text, from: valueStart + 1, while: isSpace)
            }
            let valueEnd = valueEnd(in: text, from: valueStart)
            shown.append(contentsOf: text[position..<valueStart])
            let keyword = String(String.UnicodeScalarView(text[keywordStart..<keywordEnd]))
            if valueEnd > valueStart, isSecret(keyword) {
                shown.append(contentsOf: mask.unicodeScalars)
            } else {
                shown.append(contentsOf: text[valueStart..<valueEnd])
            }
            position = valueEnd
        }
        return String(shown)
    }

    private static func skip(in text: [Unicode.Scalar], from start: Int, while condition: (Unicode.Scalar) -> Bool) -> Int {
        text[start...].firstIndex { !condition($0) } ?? text.count
    }

    /// Where a value starting at `start` ends: after its closing quote, or at the next unescaped space.
    private static func valueEnd(in text: [Unicode.Scalar], from start: Int) -> Int {
        let quoted = start < text.count && text[start] == "'"
        var position = quoted ? start + 1 : start
        while position < text.count, quoted ? text[position] != "'" : !isSpace(text[position]) {
            position += text[position] == "\\" ? 2 : 1
        }
        return min(text.count, quoted ? position + 1 : position)
    }

    /// libpq's `isspace`, in the C locale.
    private static func isSpace(_ scalar: Unicode.Scalar) -> Bool {
        [" ", "\t", "\n", "\u{0B}", "\u{0C}", "\r"].contains(scalar)
    }
}
