import Crypto
import Foundation
import X509

/// A certificate authority of the test's own, shaped like Apple's for App Store signing: a root,
/// an intermediate and a signing certificate carrying Apple's marker extensions. The test
/// configures `root` as the trusted root, then signs notifications as Apple would.
public struct TestCA: Sendable {
    public let root: Certificate
    public let intermediate: Certificate
    public let signing: Certificate
    public let signingKey: P256.Signing.PrivateKey

    public init(name: String = "Test Root CA") throws {
        let now = Date()
        let (rootKey, intermediateKey) = (P256.Signing.PrivateKey(), P256.Signing.PrivateKey())
        signingKey = P256.Signing.PrivateKey()
        let rootName = try DistinguishedName { CommonName(name) }
        let intermediateName = try DistinguishedName { CommonName("\(name) Intermediate") }
        root = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(rootKey.publicKey),
            notValidBefore: now - 3600, notValidAfter: now + 86_400, issuer: rootName, subject: rootName,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                KeyUsage(keyCertSign: true)
            },
            issuerPrivateKey: .init(rootKey))
        intermediate = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(intermediateKey.publicKey),
            notValidBefore: now - 3600, notValidAfter: now + 86_400, issuer: rootName, subject: intermediateName,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                KeyUsage(keyCertSign: true)
                Certificate.Extension(oid: [1, 2, 840, 113635, 100, 6, 2, 1], critical: false, value: [0x05, 0x00])
            },
            issuerPrivateKey: .init(rootKey))
        signing = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(signingKey.publicKey),
            notValidBefore: now - 3600, notValidAfter: now + 86_400, issuer: intermediateName,
            subject: try DistinguishedName { CommonName("Prod ECC Mac App Store and iTunes Store Receipt Signing") },
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Certificate.Extension(oid: [1, 2, 840, 113635, 100, 6, 11, 1], critical: false, value: [0x05, 0x00])
            },
            issuerPrivateKey: .init(intermediateKey))
    }

    /// A compact JWS of `payload`, ES256, with the chain in `x5c` as Apple sends it.
    public func sign(_ payload: [String: Any]) throws -> String {
        let x5c = try [signing, intermediate, root].map { Data(try $0.serializeAsPEM().derBytes).base64EncodedString() }
        let header = try JSONSerialization.data(withJSONObject: ["alg": "ES256", "x5c": x5c])
        let body = try JSONSerialization.data(withJSONObject: payload)
        let input = header.base64URL + "." + body.base64URL
        let signature = try signingKey.signature(for: Data(input.utf8))
        return input + "." + signature.rawRepresentation.base64URL
    }
}

extension Data {
    public var base64URL: String {
        base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
