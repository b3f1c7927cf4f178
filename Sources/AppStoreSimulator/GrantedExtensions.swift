import Synchronization

/// The renewal-date extensions the simulated Server API granted: the one thing about a
/// subscription the simulator remembers rather than computes, since an operator's call, not
/// the lifecycle, decides it. Every answer about the subscription (verifyReceipt's and the
/// Server API's) then reads its expiry moved (`SimulatedReceipt.extended`).
public final class GrantedExtensions: Sendable {
    /// One extension of one subscription.
    struct Grant: Sendable {
        let requestIdentifier: String
        /// When it was granted, on the simulator's clock (ms).
        let atMs: Int64
        /// How far the period's end moved (ms).
        let byMs: Int64
        /// The answer Apple gave, given again to a retry of the same request.
        let answer: [UInt8]
    }

    /// A request to extend every active subscriber of a product, by its product and request identifier.
    struct MassRequest: Sendable {
        let succeeded: Int
        let failed: Int
        let completeMs: Int64
        /// Apple works through the subscribers on its own time: the first status read finds it in progress.
        var statusReads = 0
    }

    private struct State {
        var grants: [String: [Grant]] = [:]
        var massRequests: [String: MassRequest] = [:]
    }

    private let state = Mutex(State())

    public init() {}

    private static func key(app: Int, _ id: String) -> String { "\(app)/\(id)" }

    /// The extensions of `app`'s subscription `originalTransactionID`, oldest first.
    func granted(app: Int, originalTransactionID: String) -> [Grant] {
        state.withLock { $0.grants[Self.key(app: app, originalTransactionID)] ?? [] }
    }

    func grant(_ grant: Grant, app: Int, originalTransactionID: String) {
        state.withLock { $0.grants[Self.key(app: app, originalTransactionID), default: []].append(grant) }
    }

    func recordMassRequest(_ request: MassRequest, app: Int, productID: String, requestIdentifier: String) {
        state.withLock { $0.massRequests[Self.key(app: app, productID + "/" + requestIdentifier)] = request }
    }

    /// Whether Apple has a mass request of this product and identifier already (asking again is a retry).
    func knowsMassRequest(app: Int, productID: String, requestIdentifier: String) -> Bool {
        state.withLock { $0.massRequests[Self.key(app: app, productID + "/" + requestIdentifier)] != nil }
    }

    /// The mass request as its status is read now (counting the read).
    func readMassRequest(app: Int, productID: String, requestIdentifier: String) -> MassRequest? {
        state.withLock { state in
            let key = Self.key(app: app, productID + "/" + requestIdentifier)
            state.massRequests[key]?.statusReads += 1
            return state.massRequests[key]
        }
    }
}
