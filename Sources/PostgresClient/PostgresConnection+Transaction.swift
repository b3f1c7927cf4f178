import CLibpq

extension PostgresConnection {
    /// Runs `body` inside BEGIN … COMMIT and returns its result. If `body` throws, the transaction is
    /// rolled back and the error rethrown. For a stricter isolation level, make
    /// `SET TRANSACTION ISOLATION LEVEL SERIALIZABLE` the body's first statement, and run the whole
    /// transaction again on `isSerializationFailure`.
    ///
    /// Transactions do not nest: calling this inside a transaction throws `misuse`. If a statement
    /// fails inside `body` and `body` catches the error, the transaction is still rolled back and
    /// this throws, since PostgreSQL ignores everything after a failed statement.
    public func transaction<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        guard !isInTransaction else {
            throw PostgresError(
                kind: .misuse,
                message: "transaction() was called inside a transaction; transactions do not nest, "
                    + "so do the inner work in the outer transaction's body")
        }
        try execute("BEGIN")
        let result: T
        do {
            result = try body(self)
            guard transactionStatus != PQTRANS_INERROR else {
                throw PostgresError(
                    kind: .misuse,
                    message: "a statement in the transaction failed and its error was caught; "
                        + "the transaction was rolled back")
            }
        } catch {
            rollBackOpenTransaction()
            throw error
        }
        try execute("COMMIT")
        return result
    }

    /// True between BEGIN and COMMIT or ROLLBACK, including after a failed statement.
    var isInTransaction: Bool {
        transactionStatus == PQTRANS_INTRANS || transactionStatus == PQTRANS_INERROR
    }

    /// libpq's view of the session's transaction; a dropped session has none.
    private var transactionStatus: PGTransactionStatusType {
        session.map(PQtransactionStatus) ?? PQTRANS_UNKNOWN
    }

    /// Rolls back a transaction left open, on a live session only: a lost session has no transaction
    /// left, and rolling back must not reconnect. Returns whether there was one.
    @discardableResult
    func rollBackOpenTransaction() -> Bool {
        guard isInTransaction else { return false }
        // The rollback's own failure is not the caller's problem: the error that led here is.
        _ = try? execute("ROLLBACK")
        return true
    }
}
