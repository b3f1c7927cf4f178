/// What became of a consumption request (`receiptfleet_consumption_requests_total{outcome}`).
public enum ConsumptionOutcome: String, Sendable, CaseIterable {
    /// Apple took the answer (202).
    case answered
    /// Nothing is sent: no consent, Family Sharing, or Apple refused the answer.
    case unanswered
    /// The deadline passed first.
    case missed
    /// No answer yet (Apple unavailable, its 429, no leave from the gate): tried again before the deadline.
    case retried
}
