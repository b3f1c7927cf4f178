/// `PUT /v1/accounts/{id}/refund-consent` (given) and `DELETE` (withdrawn): whether the app's
/// account lets the fleet tell Apple how its purchases were used when it asks for a refund.
/// Without it, a refund request is recorded and left unanswered. Idempotent.
struct RefundConsent: Encodable {
    let accountID: String
    let app: String
    let consented: Bool

    enum CodingKeys: String, CodingKey {
        case accountID = "account_id", app, consented
    }
}
