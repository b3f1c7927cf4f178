/// The one place where secrets are cut out of connection strings, so a URL or conninfo can be
/// printed, logged or put in an error. Both clients and every command use it: a secret is masked
/// the same way wherever it shows.
///
///     Redact.connectionString("postgresql://app:s3cret@db/ledger")   // postgresql://app:***@db/ledger
///     Redact.connectionString("host=db password='two words'")        // host=db password=***
public enum Redact {
    /// What a secret is replaced with.
    public static let mask = "***"

    /// The parameters that hold secrets, lowercased: libpq's (those it displays as `*`; the
    /// PostgresClient tests hold this list to the installed libpq) and Redis's unix:// `password`.
    public static let secretKeywords: Set<String> = ["password", "sslpassword"]

    /// A URL (`scheme://…`) or, failing that, a libpq `key=value` string, its secrets masked.
    public static func connectionString(_ text: String) -> String {
        // Leading white space (a copied line, a stray newline) must not turn a URL into "conninfo"
        // with no password keyword, printed whole.
        text.firstMatch(of: /^\s*[A-Za-z][A-Za-z0-9+.\-]*:\/\//) == nil ? conninfo(text) : url(text)
    }

    /// Free text (a server's message, say) with every occurrence of a known secret masked.
    public static func text(_ text: String, hiding secret: String) -> String {
        secret.isEmpty ? text : text.replacing(secret, with: mask)
    }

    /// Whether a parameter named `keyword` holds a secret. Matched in any case: a string libpq
    /// would refuse for its case (`PASSWORD=…`) may still be printed, and still holds the secret.
    static func isSecret(_ keyword: some StringProtocol) -> Bool {
        secretKeywords.contains(keyword.lowercased())
    }
}
