import Crypto
import Foundation
import X509

/// The simulator's stand-in for Apple's signing chain: a root, an intermediate and a signing
/// certificate shaped like Apple's (the intermediate and the signing certificate carry Apple's
/// marker extensions), with which it signs the Server API's JWS payloads.
///
/// Its keys are derived from its name, so every simulator run signs with the same chain and a
/// fleet configured to trust `rootPEM` (only ever in tests and the demo) keeps trusting it across
/// restarts; tests make others by name, to play a stranger. It is not Apple's: a fleet trusting
/// Apple's root refuses everything it signs.
public struct SimulatorSigningChain: Sendable {
    public static let rootName = "ReceiptFleet Simulator Root CA"

    public let root: Certificate
    private let signingKey: P256.Signing.PrivateKey
    /// The JWS header, base64url: ES256 and the chain in `x5c` (base64 DER, signing certificate
    /// first), the same for every payload, as Apple's is for one chain.
    private let encodedHeader: String

    public init(name: String = rootName) throws {
        let (rootKey, intermediateKey) = (try Self.key(name, "root"), try Self.key(name, "intermediate"))
        signingKey = try Self.key(name, "signing")
        // Fixed dates, so the chain is the same whenever it is made.
        let (from, until) = (Date(timeIntervalSince1970: 1_577_836_800), Date(timeIntervalSince1970: 2_208_988_800))  // 2020 to 2040
        let rootName = try DistinguishedName { CommonName(name) }
        let intermediateName = try DistinguishedName { CommonName("\(name) Intermediate") }
        root = try Certificate(
            version: .v3, serialNumber: .init(bytes: [1]), publicKey: .init(rootKey.publicKey), notValidBefore: from,
            notValidAfter: until, issuer: rootName, subject: rootName, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                KeyUsage(keyCertSign: true)
            },
            issuerPrivateKey: .init(rootKey))
        let intermediate = try Certificate(
            version: .v3, serialNumber: .init(bytes: [2]), publicKey: .init(intermediateKey.publicKey), notValidBefore: from,
            notValidAfter: until, issuer: rootName, subject: intermediateName, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                KeyUsage(keyCertSign: true)
                Certificate.Extension(oid: [1, 2, 840, 113635, 100, 6, 2, 1], critical: false, value: [0x05, 0x00])
            },
            issuerPrivateKey: .init(rootKey))
        let signing = try Certificate(
            version: .v3, serialNumber: .init(bytes: [3]), publicKey: .init(signingKey.publicKey), notValidBefore: from,
            notValidAfter: until, issuer: intermediateName,
            subject: try DistinguishedName { CommonName("\(name) App Store Signing") },
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Certificate.Extension(oid: [1, 2, 840, 113635, 100, 6, 11, 1], critical: false, value: [0x05, 0x00])
            },
            issuerPrivateKey: .init(intermediateKey))
        let chain = try [signing, intermediate, root].map { Data(try $0.serializeAsPEM().derBytes).base64EncodedString() }
        encodedHeader = Data(#"{"alg":"ES256","x5c":["#.utf8 + Array(chain.map { "\"\($0)\"" }.joined(separator: ",").utf8) + Array("]}".utf8))
            .base64URLEncoded()
    }

    /// The root, as a PEM file for the fleet's trusted roots.
    public var rootPEM: String { (try? root.serializeAsPEM().pemString) ?? "" }

    /// `payload` as a compact JWS, ES256, with the chain in `x5c` as Apple sends it.
    public func sign(_ payload: [UInt8]) -> String {
        let input = encodedHeader + "." + Data(payload).base64URLEncoded()
        let signature = (try? signingKey.signature(for: Data(input.utf8)))?.rawRepresentation ?? Data()
        return input + "." + signature.base64URLEncoded()
    }


    /// A P-256 key from the hash of the chain's name and the key's part: the same on every run.
    private static func key(_ name: String, _ part: String) throws -> P256.Signing.PrivateKey {
        try P256.Signing.PrivateKey(rawRepresentation: SHA256.hash(data: Data("\(name)|\(part)".utf8)))
    }
}

/// Base64url without padding (RFC 7515), as JWS and JWT use it. (AppStore has the same two; the
/// simulator imports no domain target, so that it speaks only what goes over the wire.)
extension Data {
    init?(base64URL text: some StringProtocol) {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        self.init(base64Encoded: base64)
    }

    /// Byte by byte: a signed answer encodes a payload or two per subscription.
    func base64URLEncoded() -> String {
        var encoded = base64EncodedData()
        while encoded.last == UInt8(ascii: "=") { encoded.removeLast() }
        for index in encoded.indices where encoded[index] == UInt8(ascii: "+") || encoded[index] == UInt8(ascii: "/") {
            encoded[index] = encoded[index] == UInt8(ascii: "+") ? UInt8(ascii: "-") : UInt8(ascii: "_")
        }
        return String(decoding: encoded, as: UTF8.self)
    }
}
