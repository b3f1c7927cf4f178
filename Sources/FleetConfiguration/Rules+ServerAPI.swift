import AppStore
import AppStoreClients
import JobQueue
import X509

extension ResolvedConfiguration {
    /// backend, and the App Store Server API: server-api-issuer-id, server-api-key-id,
    /// server-api-key-file, apple-bundle-id (one), server-api-production-url,
    /// server-api-sandbox-url, server-api-rate-limit (each endpoint's),
    /// server-api-refund-check-days, apple-root-certificate.
    /// The key's three settings come together or not at all.
    func serverAPISettings() throws -> (defaultBackend: VerificationBackend, refundCheckDays: Int, serverAPI: ServerAPISettings?) {
        let backend = try self[Settings.backend]
        let refundCheckDays = try self[Settings.serverAPIRefundCheckDays]
        let keySettings: [any AnySetting] = [Settings.serverAPIIssuerID, Settings.serverAPIKeyID, Settings.serverAPIKeyFile]
        let given = keySettings.filter(isSet)
        guard given.count == keySettings.count else {
            if let first = given.first {
                let missing = keySettings.filter { !isSet($0) }.map(\.key)
                throw ConfigurationError(key: first.key, source: source(of: first), reason: "set without \(missing.joined(separator: " and ")): the key needs all three")
            }
            if backend == .serverAPI {
                throw ConfigurationError(
                    key: "backend", source: source(of: Settings.backend),
                    reason: "server-api needs the key: set server-api-issuer-id, server-api-key-id and server-api-key-file")
            }
            return (backend, refundCheckDays, nil)
        }
        guard let key = try self[Settings.serverAPIKeyFile] else { return (backend, refundCheckDays, nil) }
        let serverAPI = try ServerAPISettings(
            key: key,
            endpoints: ServerAPIEndpoints(production: self[Settings.serverAPIProductionURL], sandbox: self[Settings.serverAPISandboxURL]),
            signatures: SignedPayloadVerifier(trustedRoots: trustedRoots()),
            rateLimit: self[Settings.serverAPIRateLimit].map { try RateLimit(perSecond: $0, burst: RateLimit.defaultBurst(perSecond: $0)) })
        return (backend, refundCheckDays, serverAPI)
    }

    /// The roots Apple's signatures must chain to: Apple Root CA - G3, built in, unless
    /// apple-root-certificate names another (a test CA).
    public func trustedRoots() throws -> [Certificate] {
        try self[Settings.appleRootCertificate]?.certificates ?? [AppleRootCertificate.load()]
    }
}

/// A file of root certificates, and what it holds.
public struct CertificateFile: Sendable {
    public let path: String
    public let certificates: [Certificate]
}

extension Rule where Value == CertificateFile {
    public static var certificateFile: Rule {
        .converting("a PEM or DER certificate file") { path, _ in
            CertificateFile(path: path, certificates: try AppleRootCertificate.certificates(inFile: path))
        }
        .completing(.file)
    }
}

extension Rule where Value == VerificationBackend {
    public static var backend: Rule {
        Rule("verify-receipt or server-api") { text, _ in
            guard let backend = VerificationBackend(argument: text) else { throw InvalidValue("'\(text)' is neither verify-receipt nor server-api") }
            return backend
        }
        .writing(\.description)
        .offering(["verify-receipt", "server-api"])
    }
}

extension Rule where Value == ServerAPIKey {
    /// The .p8 file of the key that server-api-issuer-id and server-api-key-id name, for the one
    /// app apple-bundle-id names: its tokens name one app.
    public static var serverAPIKey: Rule {
        .converting("the key's .p8 file") { path, configuration in
            guard let issuerID = try configuration[Settings.serverAPIIssuerID], let keyID = try configuration[Settings.serverAPIKeyID] else {
                throw InvalidValue("set without server-api-issuer-id and server-api-key-id: the key needs all three")
            }
            let bundleIDs = try configuration[Settings.appleBundleID]
            guard bundleIDs.count == 1 else {
                throw ConfigurationError(
                    key: "apple-bundle-id", source: configuration.source(of: Settings.appleBundleID),
                    reason: "the Server API's tokens name one app: set apple-bundle-id to its bundle id")
            }
            return try ServerAPIKey(issuerID: issuerID, keyID: keyID, bundleID: bundleIDs[0], file: path)
        }
    }
}
