import AppStore
import AppStoreClients
import HTTPClient

/// One thread's clients for Apple's two services, chosen by what is asked: a receipt goes to
/// verifyReceipt with the deployment's shared secret, a transaction to the Server API.
///
/// During a rotation of the shared secret (`previousSharedSecret` set), a 21004 for one secret is
/// asked again with the other, as one more call to Apple, and the secret that worked is tried
/// first from then on: the switch in App Store Connect halts nothing.
public final class AppleClients: AppleVerifier {
    public let verifyReceipt: AppStoreClient
    /// Nil when the deployment configured no Server API key.
    public let serverAPI: ServerAPIClient?
    /// The secrets to try, the one that last worked first; none when no secret is configured.
    private var sharedSecrets: [SharedSecret]

    public init(settings: FleetSettings) throws {
        let http = HTTPClientConfiguration(
            connectTimeout: .seconds(10), totalTimeout: settings.appleTimeout, caFile: settings.appleCAFile)
        verifyReceipt = try AppStoreClient(endpoints: settings.endpoints, http: http)
        serverAPI = try settings.serverAPI.map {
            try ServerAPIClient(endpoints: $0.endpoints, tokens: ServerAPITokens(key: $0.key), signatures: $0.signatures, http: http)
        }
        sharedSecrets = settings.sharedSecrets
    }

    public func verify(
        _ subject: VerificationSubject, startingIn environment: AppStoreEnvironment, mayCallAgain: (AppleEndpoint) -> Bool
    ) -> Verification {
        switch subject {
        case .receipt(let receipt):
            // The newest transactions are enough: the stored state tells what came before.
            func ask(with secret: SharedSecret?) -> Verification {
                verifyReceipt.verify(
                    receipt, sharedSecret: secret, excludeOldTransactions: true, startingIn: environment,
                    mayRedirect: { mayCallAgain(.verifyReceipt) })
            }
            var verification = ask(with: sharedSecrets.first)
            guard sharedSecrets.count == 2, verification.response?.status == 21004, mayCallAgain(.verifyReceipt) else {
                return verification
            }
            let other = ask(with: sharedSecrets[1])
            verification.exchanges += other.exchanges
            verification.response = other.response ?? verification.response
            if other.response?.status != 21004 { sharedSecrets.reverse() }
            return verification
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
