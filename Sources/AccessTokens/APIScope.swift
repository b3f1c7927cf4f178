/// What an API token may do, written beside its name in `api-tokens` (`analytics(read):TOKEN`);
/// a token written without scopes may do everything, as before scopes existed, and `config check`
/// warns about it. docs/openapi.yaml names each route's scope (`x-receiptfleet-scope`).
public enum APIScope: String, CaseIterable, Sendable {
    /// Look subscriptions and purchases up.
    case read
    /// Register receipts and transactions.
    case register
    /// Forget an account (`DELETE /v1/accounts/…`).
    case deleteAccounts = "delete-accounts"
    /// Record an account's consent to share consumption data with Apple on a refund request, or
    /// its withdrawal (`PUT`/`DELETE /v1/accounts/…/refund-consent`).
    case refundConsent = "refund-consent"

    public static var names: Set<String> { Set(allCases.map(\.rawValue)) }
}
