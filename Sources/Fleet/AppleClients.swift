import AppStore
import AppStoreClients
import HTTPClient

/// One thread's clients for Apple's two services, chosen by what is asked: a receipt goes to
/// verifyReceipt with the deployment's shared secret, a transaction to the Server API.
public final class AppleClients: AppleVerifier {
    public let verifyReceipt: AppStoreClient
    /// Nil when the deployment configured no Server API key.
    public let serverAPI: ServerAPIClient?
    private let sharedSecret: SharedSecret?

    public init(settings: FleetSettings) throws {
        let http = HTTPClientConfiguration(
            connectTimeout: .seconds(10), totalTimeout: settings.appleTimeout, caFile: settings.appleCAFile)
        verifyReceipt = try AppStoreClient(endpoints: settings.endpoints, http: http)
        serverAPI = try settings.serverAPI.map {
            try ServerAPIClient(endpoints: $0.endpoints, tokens: ServerAPITokens(key: $0.key), signatures: $0.signatures, http: http)
        }
        sharedSecret = settings.sharedSecret
    }

    public func verify(
        _ subject: VerificationSubject, startingIn environment: AppStoreEnvironment, mayCallAgain: (AppleEndpoint) -> Bool
    ) -> Verification {
        switch subject {
        case .receipt(let receipt):
            // The newest transactions are enough: the stored state tells what came before.
            return verifyReceipt.verify(
                receipt, sharedSecret: sharedSecret, excludeOldTransactions: true, startingIn: environment,
                mayRedirect: { mayCallAgain(.verifyReceipt) })
        case .transaction(let originalTransactionID, let knownLatestTransactionID):
            guard let serverAPI else {
                return Verification(exchanges: [VerificationExchange(
                    environment: environment, outcome: .serverAPI(.notConfigured), latency: .zero,
                    problem: "no server-api-key-file is configured", endpoint: .subscriptionStatuses)], response: nil)
            }
            return serverAPI.verify(
                originalTransactionID: originalTransactionID, knownLatestTransactionID: knownLatestTransactionID,
                startingIn: environment, mayCallAgain: mayCallAgain)
        }
    }
}
