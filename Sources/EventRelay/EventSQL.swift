/// SQL shared by the relay and the webhook dispatcher, so the stream and the webhooks describe an
/// event the same way. Each expression reads the `events` row aliased `e`.
enum EventSQL {
    /// `occurred_at` as `YYYY-MM-DDTHH:MM:SS.mmmZ`, the form docs/events.md promises.
    static let occurredAt = #"to_char(e.occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')"#

    /// The envelope's schema version (docs/events.md, "Compatibility"): fields are only added within
    /// a version; renaming or removing one would make version 2.
    static let schemaVersion = 1

    /// The whole event as one JSON object (json, not jsonb, so the keys keep this order). It names its
    /// subscription or its one-time purchase; the other id is null.
    static let envelope = """
        json_build_object('schema_version', \(schemaVersion), 'id', e.id, 'type', e.type, 'subscription_id', e.subscription_id,
            'purchase_id', e.purchase_id,
            'original_transaction_id', e.original_transaction_id, 'occurred_at', \(occurredAt),
            'payload', e.payload)::text
        """

    /// A PostgreSQL array literal of `values`, for a `$n::uuid[]` or `$n::text[]` parameter. Only for
    /// values that need no quoting (uuids, event type names): the callers pass nothing else.
    static func arrayLiteral(_ values: [String]) -> String {
        precondition(
            values.allSatisfy { $0.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-") } },
            "array literal elements must need no quoting")
        return "{" + values.joined(separator: ",") + "}"
    }
}
