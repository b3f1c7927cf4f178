import AccessTokens

extension APIRequestContext {
    /// Throws 403 unless the caller's token may do `scope`.
    func require(_ scope: APIScope) throws(APIError) {
        guard let grant, !grant.allows(scope.rawValue) else { return }
        throw APIError(.forbidden, "insufficient_scope", "the token '\(grant.name)' may not \(scope.rawValue) "
            + "(its scopes: \((grant.scopes ?? []).sorted().joined(separator: ", "))); give it the scope in api-tokens, "
            + "NAME(\(scope.rawValue)):TOKEN")
    }
}
