import Foundation

/// The metric names that dashboards and alert rules query, found in their files without a PromQL
/// or YAML parser, on purpose: the rules below are few enough to trust, and a self-check
/// (`MetricsContractTests.theNameExtractorFindsEveryName`) fails if they miss a name.
enum QueryNames {
    /// The metric names in one PromQL expression.
    ///
    /// The tokenizer: drop quoted strings ('…', "…", `…`: label values, never names) and comments
    /// (# to the end of the line); then every maximal run of identifier characters [A-Za-z0-9_:]
    /// that starts with `receiptfleet_` (and is not the tail of a longer identifier) is a name.
    /// A name with a colon is a recording rule's (level:metric:operations), not a scraped metric,
    /// and is left out.
    static func inPromQL(_ expression: String) -> Set<String> {
        var names: Set<String> = []
        var token = ""
        var quote: Character?
        var inComment = false
        func endToken() {
            if token.hasPrefix("receiptfleet_"), token.count > "receiptfleet_".count, !token.contains(":") { names.insert(token) }
            token = ""
        }
        for character in expression {
            if inComment {
                if character == "\n" { inComment = false }
                continue
            }
            if let open = quote {
                if character == open { quote = nil }  // PromQL strings escape with \, never by doubling
                continue
            }
            if character.isASCII, character.isLetter || character.isNumber || character == "_" || character == ":" {
                token.append(character)
                continue
            }
            endToken()
            if character == "\"" || character == "'" || character == "`" { quote = character }
            if character == "#" { inComment = true }
        }
        endToken()
        return names
    }

    /// The PromQL of a Grafana dashboard: every `expr` (panel targets), and the `query` or
    /// `definition` of its template variables.
    static func dashboardExpressions(_ json: Data) throws -> [String] {
        var found: [String] = []
        func walk(_ value: Any, inTemplating: Bool) {
            if let object = value as? [String: Any] {
                for (key, child) in object {
                    if let text = child as? String, key == "expr" || (inTemplating && (key == "query" || key == "definition")) {
                        found.append(text)
                    } else {
                        walk(child, inTemplating: inTemplating || key == "templating")
                    }
                }
            } else if let array = value as? [Any] {
                for child in array { walk(child, inTemplating: inTemplating) }
            }
        }
        walk(try JSONSerialization.jsonObject(with: json), inTemplating: false)
        return found
    }

    /// A Prometheus rule file's expressions (`expr:` values: plain, quoted, or `|`/`>` blocks over
    /// the following, deeper-indented lines) and the names its recording rules define (`record:`).
    static func ruleFile(_ yaml: String) -> (expressions: [String], recorded: Set<String>) {
        let lines = yaml.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        var expressions: [String] = []
        var recorded: Set<String> = []
        for (index, line) in lines.enumerated() {
            guard let (key, column, value) = keyValue(line) else { continue }
            if key == "record" { recorded.insert(value.trimmingCharacters(in: CharacterSet(charactersIn: "\"' "))) }
            guard key == "expr" else { continue }
            var text = value.hasPrefix("|") || value.hasPrefix(">") ? "" : value
            for next in lines[(index + 1)...] {
                let indent = next.prefix { $0 == " " }.count
                guard next.trimmingCharacters(in: .whitespaces).isEmpty || indent > column else { break }
                text += "\n" + next
            }
            expressions.append(unquoted(text.trimmingCharacters(in: .whitespacesAndNewlines)))
        }
        return (expressions, recorded)
    }

    /// A YAML scalar without its quotes: '…' (with '' for ') or "…" (with \" for ").
    private static func unquoted(_ scalar: String) -> String {
        guard scalar.count >= 2, let first = scalar.first, first == "'" || first == "\"", scalar.last == first else { return scalar }
        let inner = String(scalar.dropFirst().dropLast())
        return first == "'" ? inner.replacingOccurrences(of: "''", with: "'") : inner.replacingOccurrences(of: "\\\"", with: "\"")
    }

    /// Whether a YAML file holds Prometheus rules: a `groups:` key (at the top, or under a
    /// PrometheusRule's `spec:`).
    static func isRuleFile(_ yaml: String) -> Bool {
        yaml.split(separator: "\n").contains { $0.trimmingCharacters(in: .whitespaces) == "groups:" }
    }

    /// `  - key: value` → (key, the key's column, value).
    private static func keyValue(_ line: String) -> (String, Int, String)? {
        var rest = Substring(line)
        var column = 0
        while let first = rest.first, first == " " || first == "-" {
            rest = rest.dropFirst()
            column += 1
        }
        guard let colon = rest.firstIndex(of: ":") else { return nil }
        let key = String(rest[..<colon])
        guard !key.isEmpty, key.allSatisfy({ $0.isLetter || $0 == "_" }) else { return nil }
        return (key, column, rest[rest.index(after: colon)...].trimmingCharacters(in: .whitespaces))
    }

    /// The names `expression` queries that `scrape` lacks. A histogram's `_bucket`, `_sum` and
    /// `_count` series belong to its family.
    static func missing(from scrape: Scrape, in names: Set<String>) -> Set<String> {
        names.filter { name in
            if scrape.families[name] != nil { return false }
            for suffix in ["_bucket", "_sum", "_count"] where name.hasSuffix(suffix) {
                if scrape.families[String(name.dropLast(suffix.count))] == "histogram" { return false }
            }
            return true
        }
    }
}
