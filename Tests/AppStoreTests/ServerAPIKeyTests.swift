import AppStore
import Crypto
import Foundation
import TestSupport
import Testing

/// The Server API's bearer tokens: ES256 JWTs as Apple specifies them, cached and renewed, and a
/// key that never shows itself.
@Suite struct ServerAPIKeyTests {
    static let signingKey = P256.Signing.PrivateKey()

    static func key(pem: String = signingKey.pemRepresentation) throws -> ServerAPIKey {
        try ServerAPIKey(issuerID: "57246542-96fe-1a63-e053-0824d011072a", keyID: "2X9R4HXF34", bundleID: "com.example", pem: pem)
    }

    /// The token's three parts: header and claims as JSON objects, and whether the signature holds.
    static func read(_ token: String) throws -> (header: [String: Any], claims: [String: Any], signed: Bool) {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        try #require(parts.count == 3)
        func decoded(_ part: String) throws -> Data { try #require(Data(base64URL: part)) }
        let header = try #require(try JSONSerialization.jsonObject(with: decoded(parts[0])) as? [String: Any])
        let claims = try #require(try JSONSerialization.jsonObject(with: decoded(parts[1])) as? [String: Any])
        let signature = try P256.Signing.ECDSASignature(rawRepresentation: decoded(parts[2]))
        let signed = signingKey.publicKey.isValidSignature(signature, for: Data((parts[0] + "." + parts[1]).utf8))
        return (header, claims, signed)
    }

    @Test func aTokenIsAnES256JWTAsAppleAsksForIt() throws {
        let now = Date(timeIntervalSince1970: 1_700_000_000)
        let (header, claims, signed) = try Self.read(try Self.key().token(issuedAt: now, lifetime: .seconds(1_200)))
        #expect(signed)
        #expect(header["alg"] as? String == "ES256")
        #expect(header["typ"] as? String == "JWT")
        #expect(header["kid"] as? String == "2X9R4HXF34")
        #expect(claims["iss"] as? String == "57246542-96fe-1a63-e053-0824d011072a")
        #expect(claims["aud"] as? String == "appstoreconnect-v1")
        #expect(claims["bid"] as? String == "com.example")
        #expect(claims["iat"] as? Int == 1_700_000_000)
        #expect(claims["exp"] as? Int == 1_700_001_200)
    }

    @Test func noTokenLivesLongerThanAnHour() throws {
        let (_, claims, _) = try Self.read(try Self.key().token(issuedAt: Date(timeIntervalSince1970: 0), lifetime: .seconds(7_200)))
        #expect(claims["exp"] as? Int == 3_600)
        #expect(throws: ServerAPIKeyError.self) { try ServerAPITokens(key: try Self.key(), lifetime: .seconds(3_601)) }
    }

    @Test func aTokenIsReusedUntilItIsDueForRenewal() throws {
        let tokens = try ServerAPITokens(key: try Self.key(), lifetime: .seconds(1_200), renewBefore: .seconds(300))
        let start = Date(timeIntervalSince1970: 1_700_000_000)
        let first = tokens.token(at: start)
        #expect(tokens.token(at: start.addingTimeInterval(899)) == first)
        let renewed = tokens.token(at: start.addingTimeInterval(900))
        #expect(renewed != first)
        #expect(try Self.read(renewed).claims["iat"] as? Int == 1_700_000_900)
        #expect(tokens.token(at: start.addingTimeInterval(1_000)) == renewed)
    }

    /// The key is a secret: neither the key nor an error about it prints its contents.
    @Test func theKeyNeverShowsItself() throws {
        let pem = Self.signingKey.pemRepresentation
        let body = pem.split(separator: "\n").dropFirst().first.map(String.init) ?? pem
        let key = try Self.key()
        for text in [String(describing: key), String(reflecting: key), "\(Mirror(reflecting: key).children.map(\.value))"] {
            #expect(!text.contains(body))
            #expect(text.contains("2X9R4HXF34"))
        }
        let broken = String(pem.dropLast(40))
        let error = try #require(throws: ServerAPIKeyError.self) { try Self.key(pem: broken) }
        #expect(error.description.contains("2X9R4HXF34"))
        #expect(error.description.contains(".p8"))
        #expect(!error.description.contains(String(body.prefix(20))))
        let missing = try #require(throws: ServerAPIKeyError.self) {
            try ServerAPIKey(issuerID: "i", keyID: "K1", bundleID: "b", file: "/nonexistent/AuthKey_K1.p8")
        }
        #expect(missing.description.contains("/nonexistent/AuthKey_K1.p8"))
    }
}
