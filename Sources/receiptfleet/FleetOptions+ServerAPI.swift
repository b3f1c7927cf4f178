import AppStore
import AppStoreClients
import Fleet
import JobQueue
import X509

extension ResolvedConfiguration {
    /// backend, and the App Store Server API: server-api-issuer-id, server-api-key-id,
    /// server-api-key-file, apple-bundle-id (one), server-api-production-url,
    /// server-api-sandbox-url, server-api-rate-limit (each endpoint's), apple-root-certificate.
    /// The key's three settings come together or not at all.
    func applyServerAPISettings(to settings: inout FleetSettings) throws {
        if let (text, source) = value("backend") {
            guard let backend = VerificationBackend(argument: text) else {
                throw ConfigurationError(key: "backend", source: source, reason: "'\(text)' is neither verify-receipt nor server-api")
            }
            settings.defaultBackend = backend
        }
        let keySettings = ["server-api-issuer-id", "server-api-key-id", "server-api-key-file"]
        let given = keySettings.compactMap { key in value(key).map { (key, $0.value, $0.source) } }
        guard given.count == keySettings.count else {
            if let (key, _, source) = given.first {
                let missing = keySettings.filter { key in !given.contains { $0.0 == key } }
                throw ConfigurationError(key: key, source: source, reason: "set without \(missing.joined(separator: " and ")): the key needs all three")
            }
            if settings.defaultBackend == .serverAPI {
                throw ConfigurationError(
                    key: "backend", source: value("backend")?.source ?? "default",
                    reason: "server-api needs the key: set server-api-issuer-id, server-api-key-id and server-api-key-file")
            }
            return
        }
        let bundleIDs = string("apple-bundle-id", default: "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        guard bundleIDs.count == 1, let bundleID = bundleIDs.first, !bundleID.isEmpty else {
            throw ConfigurationError(
                key: "apple-bundle-id", source: value("apple-bundle-id")?.source ?? "default",
                reason: "the Server API's tokens name one app: set apple-bundle-id to its bundle id")
        }
        let key: ServerAPIKey
        do {
            key = try ServerAPIKey(issuerID: given[0].1, keyID: given[1].1, bundleID: bundleID, file: given[2].1)
        } catch {
            throw ConfigurationError(key: "server-api-key-file", source: given[2].2, reason: error.description)
        }
        settings.serverAPI = ServerAPISettings(
            key: key,
            endpoints: ServerAPIEndpoints(
                production: string("server-api-production-url", default: ServerAPIEndpoints.apple.production),
                sandbox: string("server-api-sandbox-url", default: ServerAPIEndpoints.apple.sandbox)),
            signatures: SignedPayloadVerifier(trustedRoots: try trustedRoots()),
            rateLimit: try value("server-api-rate-limit").map { _ in
                let rate = try number("server-api-rate-limit", default: 50.0, { $0 > 0 && $0 <= 100_000 }, "a rate between 0 and 100000 per second")
                return try RateLimit(perSecond: rate, burst: RateLimit.defaultBurst(perSecond: rate))
            })
    }

    /// The roots Apple's signatures must chain to: Apple Root CA - G3, built in, unless
    /// apple-root-certificate names another (a test CA).
    func trustedRoots() throws -> [Certificate] {
        guard let (path, source) = value("apple-root-certificate") else { return [try AppleRootCertificate.load()] }
        do {
            return try AppleRootCertificate.certificates(inFile: path)
        } catch {
            throw ConfigurationError(key: "apple-root-certificate", source: source, reason: error.description)
        }
    }
}
