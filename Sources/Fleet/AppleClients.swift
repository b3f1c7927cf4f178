import AppStore
import AppStoreClients
import FleetConfiguration
import HTTPClient
import Lanes
import VerificationUseCase

/// One thread's clients for Apple's two services, chosen by what is asked: a receipt goes to
/// verifyReceipt with its app's shared secret, a transaction to the Server API with a token for
/// its app (one client per app, made when first needed: each holds its connections and tokens).
///
/// When an app has two secrets (a rotation) or the app is not known yet (a registration that
/// names none: every configured secret is a candidate), a 21004 for one secret is asked again
/// with the next, as one more call to Apple, and the secret that worked is tried first from then
/// on: the switch in App Store Connect halts nothing.
public final class AppleClients: AppleVerifier {
    public let verifyReceipt: AppStoreClient
    /// The Server API's clients, by the bundle id their tokens name.
    private var serverAPI: [String: ServerAPIClient] = [:]
    private let http: HTTPClientConfiguration
    private let settings: FleetSettings
    private let clock: any FleetClock
    /// The secrets to try for each app (the key nil: an app not known yet), the one that last
    /// worked first; filled from the settings on first use.
    private var sharedSecrets: [String?: [SharedSecret]] = [:]

    public init(settings: FleetSettings, clock: any FleetClock) throws {
        let http = HTTPClientConfiguration(
            connectTimeout: .seconds(10), totalTimeout: settings.appleTimeout, caFile: settings.appleCAFile)
        verifyReceipt = try AppStoreClient(endpoints: settings.endpoints, http: http)
        self.http = http
        self.settings = settings
        self.clock = clock
    }

    public func verify(
        _ subject: VerificationSubject, ofApp app: String?, startingIn environment: AppStoreEnvironment,
        leave: (AppleEndpoint) -> Bool
    ) -> Verification {
        switch subject {
        case .receipt(let receipt):
            // The newest transactions are enough: the stored state tells what came before.
            func ask(with secret: SharedSecret?) -> Verification {
                verifyReceipt.verify(
                    receipt, sharedSecret: secret, excludeOldTransactions: true, startingIn: environment,
                    leave: { leave(.verifyReceipt) })
            }
            let secrets = sharedSecrets[app] ?? settings.sharedSecrets(forApp: app)
            var verification = ask(with: secrets.first)
            for (index, secret) in secrets.enumerated().dropFirst() {
                guard verification.response?.status == 21004 else { break }
                let other = ask(with: secret)
                guard other.outcome != .notSent else { break }  // no leave for it: the job tries again later
                verification.exchanges += other.exchanges
                verification.response = other.response ?? verification.response
                if other.response?.status != 21004 {
                    sharedSecrets[app] = [secret] + secrets.enumerated().filter { $0.offset != index }.map(\.element)
                }
            }
            return verification
        case .transaction(let originalTransactionID, let knownLatestTransactionID, let refunds, let onlyIn):
            let serverAPI: ServerAPIClient
            do {
                serverAPI = try serverAPIClient(forApp: app)
            } catch {
                return Verification(exchanges: [VerificationExchange(
                    environment: environment, outcome: .serverAPI(.notConfigured), latency: .zero,
                    problem: "\(error)", endpoint: .subscriptionStatuses)], response: nil)
            }
            return serverAPI.verify(
                originalTransactionID: originalTransactionID, knownLatestTransactionID: knownLatestTransactionID,
                refunds: refunds, onlyIn: onlyIn, startingIn: environment, leave: leave)
        }
    }

    /// The Server API's client for `app`'s tokens, made on first use.
    public func serverAPIClient(forApp app: String?) throws -> ServerAPIClient {
        guard let configured = settings.serverAPI else { throw ServerAPIUnavailable.notConfigured }
        let bundleID = settings.serverAPIBundleID(forApp: app)
        if let client = serverAPI[bundleID] { return client }
        let client = try ServerAPIClient(
            endpoints: configured.endpoints, tokens: ServerAPITokens(key: configured.key.forApp(bundleID: bundleID)),
            signatures: configured.signatures, http: http, now: { [clock] in clock.now() })
        serverAPI[bundleID] = client
        return client
    }
}

/// Why a thread has no Server API client.
private enum ServerAPIUnavailable: Error, CustomStringConvertible {
    case notConfigured

    var description: String { "no server-api-key-file is configured" }
}
