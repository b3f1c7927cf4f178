import Fleet
import Ledger
import Logging

/// `DELETE /v1/accounts/{id}`: forgets everything the app's account is linked to (`Ledger.forget`),
/// records it in the audit trail under the caller's token name, and says what went. Idempotent:
/// deleting an account again answers 200 with nothing forgotten.
struct AccountDeletion: Encodable {
    let accountID: String
    let app: String
    let forgottenSubscriptions: [Int64]
    let forgottenPurchases: [Int64]
    let forgottenClaims: Int

    enum CodingKeys: String, CodingKey {
        case accountID = "account_id", app
        case forgottenSubscriptions = "forgotten_subscriptions", forgottenPurchases = "forgotten_purchases"
        case forgottenClaims = "forgotten_claims"
    }

    static func forget(account: String, app: String, by client: String, in lanes: APILanes, logger: Logger) async throws -> AccountDeletion {
        let target = ForgetTarget.account(id: account, app: app)
        let forgotten = try await lanes.run { connections in
            let ledger = connections.ledger
            return try ledger.audited(
                AuditRecord(actor: client, via: .api, action: "subscriptions.forget", target: target.description),
                results: \.auditDetails,
                unrecorded: { logger.error("the audit trail did not record an account deletion", metadata: ["error": "\($0)"]) }
            ) { try ledger.forget(target) }
        }
        return AccountDeletion(accountID: account, app: app, forgottenSubscriptions: forgotten.subscriptions,
                               forgottenPurchases: forgotten.purchases, forgottenClaims: forgotten.claims)
    }
}
