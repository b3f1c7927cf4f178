// Placeholder: replaced by the PostgresClient implementation.
