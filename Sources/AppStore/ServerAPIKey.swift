import Crypto
import Foundation

/// An In-App Purchase key from App Store Connect (Users and Access → Integrations), with which the
/// App Store Server API's requests are signed: ES256 JSON Web Tokens naming the key, its issuer and
/// the app. The private key never leaves this value: `description` names the key id only.
public struct ServerAPIKey: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The audience Apple requires in every token.
    public static let audience = "appstoreconnect-v1"
    /// The longest a token may live, by Apple's rules.
    public static let longestLifetime = Duration.seconds(3_600)

    public let issuerID: String
    public let keyID: String
    public let bundleID: String
    private let privateKey: P256.Signing.PrivateKey

    /// Reads the key from the `.p8` file's text (PEM, `BEGIN PRIVATE KEY`).
    public init(issuerID: String, keyID: String, bundleID: String, pem: String) throws(ServerAPIKeyError) {
        for (name, value) in [("issuer id", issuerID), ("key id", keyID), ("bundle id", bundleID)] where value.isEmpty {
            throw ServerAPIKeyError(keyID: keyID, reason: "the \(name) is empty")
        }
        do {
            privateKey = try P256.Signing.PrivateKey(pemRepresentation: pem)
        } catch {
            throw ServerAPIKeyError(
                keyID: keyID,
                reason: "the key is not a P-256 private key in PEM (the .p8 file App Store Connect gives, "
                    + "'-----BEGIN PRIVATE KEY-----')")
        }
        self.issuerID = issuerID
        self.keyID = keyID
        self.bundleID = bundleID
    }

    /// The same key, signing for another app of the account: an In-App Purchase key is the
    /// account's, and each token names the app it asks about (`bid`).
    public func forApp(bundleID: String) -> ServerAPIKey {
        ServerAPIKey(issuerID: issuerID, keyID: keyID, bundleID: bundleID, privateKey: privateKey)
    }

    private init(issuerID: String, keyID: String, bundleID: String, privateKey: P256.Signing.PrivateKey) {
        (self.issuerID, self.keyID, self.bundleID, self.privateKey) = (issuerID, keyID, bundleID, privateKey)
    }

    /// Reads the key from its `.p8` file.
    public init(issuerID: String, keyID: String, bundleID: String, file path: String) throws(ServerAPIKeyError) {
        guard let pem = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw ServerAPIKeyError(keyID: keyID, reason: "cannot read the key file \(path): check the path and its permissions")
        }
        try self.init(issuerID: issuerID, keyID: keyID, bundleID: bundleID, pem: pem)
    }

    /// A bearer token issued at `now`, valid for `lifetime` (at most `longestLifetime`).
    public func token(issuedAt now: Date, lifetime: Duration) -> String {
        let issued = Int64(now.timeIntervalSince1970.rounded(.down))
        let seconds = min(lifetime, Self.longestLifetime).components.seconds
        var header = Array(#"{"alg":"ES256","typ":"JWT","kid":"#.utf8)
        JSONText.appendString(keyID, to: &header)
        header += Array("}".utf8)
        var claims = Array(#"{"iss":"#.utf8)
        JSONText.appendString(issuerID, to: &claims)
        claims += Array(#","iat":\#(issued),"exp":\#(issued + seconds),"aud":"\#(Self.audience)","bid":"#.utf8)
        JSONText.appendString(bundleID, to: &claims)
        claims += Array("}".utf8)
        let signingInput = Data(header).base64URLEncoded() + "." + Data(claims).base64URLEncoded()
        // ECDSA over P-256 with SHA-256; JWS wants the raw r‖s form, not DER.
        let signature = (try? privateKey.signature(for: Data(signingInput.utf8)))?.rawRepresentation ?? Data()
        return signingInput + "." + signature.base64URLEncoded()
    }

    /// The public half, for checking tokens (the simulator's side, and tests).
    public var publicKey: P256.Signing.PublicKey { privateKey.publicKey }

    public var description: String { "In-App Purchase key \(keyID) (issuer \(issuerID), app \(bundleID))" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["description": description]) }
}

/// A Server API key that cannot be used, naming the key by its id (never its contents).
public struct ServerAPIKeyError: Error, Sendable, CustomStringConvertible {
    public let keyID: String
    public let reason: String

    public var description: String { "App Store Server API key \(keyID.isEmpty ? "(no key id)" : keyID): \(reason)" }
}

/// One key's bearer tokens, made once and used until they are near their expiry, so a busy worker
/// signs a few tokens an hour instead of one per call. Confined to the thread that owns it.
public final class ServerAPITokens {
    public let key: ServerAPIKey
    private let lifetime: Duration
    private let renewBefore: Duration
    private var current: (token: String, renewAt: Date)?

    /// - Parameters:
    ///   - lifetime: each token's; at most an hour, Apple's limit.
    ///   - renewBefore: how long before its expiry a token is replaced, so that none expires in flight.
    public init(key: ServerAPIKey, lifetime: Duration = .seconds(1_200), renewBefore: Duration = .seconds(300)) throws(ServerAPIKeyError) {
        guard lifetime <= ServerAPIKey.longestLifetime, renewBefore < lifetime, renewBefore >= .zero else {
            throw ServerAPIKeyError(
                keyID: key.keyID, reason: "a token must live at most 60 minutes and be renewed before it expires")
        }
        self.key = key
        self.lifetime = lifetime
        self.renewBefore = renewBefore
    }

    /// The token to send now: the cached one, or a new one when it is due for renewal.
    public func token(at now: Date = Date()) -> String {
        if let current, now < current.renewAt { return current.token }
        let token = key.token(issuedAt: now, lifetime: lifetime)
        current = (token, now.addingTimeInterval(TimeInterval((lifetime - renewBefore).components.seconds)))
        return token
    }
}
