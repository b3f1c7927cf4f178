import Synchronization

/// The answers to CONSUMPTION_REQUEST notifications the simulated Server API accepted (Send
/// Consumption Information), in the order they came: what a test asserts Apple was told.
public final class ReceivedConsumption: Sendable {
    /// One accepted `ConsumptionRequest`, as Apple read it.
    public struct Answer: Sendable, Equatable {
        /// The app's bundle id.
        public let app: String
        public let transactionID: String
        public let environment: String
        public let deliveryStatus: String
        public let sampleContentProvided: Bool
        public let refundPreference: String?
        public let consumptionPercentage: Int?
        /// When it came, on the simulator's clock (ms).
        public let atMs: Int64
    }

    private let answers = Mutex<[Answer]>([])

    public init() {}

    /// Every accepted answer, oldest first.
    public var all: [Answer] { answers.withLock { $0 } }

    func record(_ answer: Answer) {
        answers.withLock { $0.append(answer) }
    }
}
