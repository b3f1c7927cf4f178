import Crypto
import Foundation
import Synchronization
import X509

/// Checks a JWS that Apple signed (a V2 notification's `signedPayload`, and the
/// `signedTransactionInfo` inside it) and returns its payload.
///
/// Apple signs with ES256 and puts its certificate chain in the header's `x5c`: the signing
/// certificate, then Apple's intermediate, then the root. The chain must verify (RFC 5280,
/// signatures and validity at `time`) to one of the configured trusted roots, whatever root the
/// sender included; the signing certificate and the intermediate must carry the markers Apple
/// puts on App Store signing certificates; and the JWS signature must verify with the signing
/// certificate's key. Revocation is not checked (that would need OCSP requests to Apple).
///
/// Apple signs every payload with the same few chains, and validating one costs far more than the
/// payload's own signature: a chain that validated is remembered (by its exact `x5c` text) with its
/// signing key and the time span all its certificates are valid in, and then only the signature
/// and that span are checked.
public struct SignedPayloadVerifier: Sendable {
    let trustedRoots: [Certificate]
    private let remembered = ValidatedChains()

    /// Apple sends three certificates (signing, intermediate, root); more is not Apple.
    static let maximumChainLength = 3
    /// Apple's largest signed payloads (a notification carrying a signed transaction and renewal
    /// info) are around 15 KiB; a bound keeps a forged one from costing more than a glance.
    public static let maximumBytes = 64 * 1024

    public init(trustedRoots: [Certificate]) {
        self.trustedRoots = trustedRoots
    }

    /// Apple's marker extensions: on the signing certificate, and on the intermediate.
    static let signingCertificateMarker = "1.2.840.113635.100.6.11.1"
    static let intermediateMarker = "1.2.840.113635.100.6.2.1"

    /// The payload of `jws` once its chain and signature hold at `time`.
    public func payload(of jws: some StringProtocol, at time: Date) async throws(SignatureError) -> Data {
        let parsed = try CompactJWS(jws)
        if let key = remembered.key(of: parsed.x5c, at: time) { return try parsed.payload(verifiedWith: key) }
        return try parsed.payload(verifiedWith: await validate(parsed.x5c, at: time))
    }

    /// The payload of `jws` when its chain validated before and still holds at `time` and its
    /// signature holds; nil when the chain must be validated first (`payload(of:at:)`, async). For
    /// a thread of its own, which then needs no hop to Swift's pool for all but a chain's first payload.
    public func payloadOfKnownChain(of jws: some StringProtocol, at time: Date) throws(SignatureError) -> Data? {
        let parsed = try CompactJWS(jws)
        guard let key = remembered.key(of: parsed.x5c, at: time) else { return nil }
        return try parsed.payload(verifiedWith: key)
    }

    /// Validates an `x5c` chain at `time` and remembers it; returns its signing key.
    private func validate(_ x5c: [String], at time: Date) async throws(SignatureError) -> P256.Signing.PublicKey {
        let chain: [Certificate]
        do {
            chain = try x5c.map { text throws -> Certificate in
                guard let der = Data(base64Encoded: text) else { throw SignatureError.malformed("an x5c entry is not base64") }
                return try Certificate(derEncoded: Array(der))
            }
        } catch {
            throw .malformed("an x5c entry is not a DER certificate")
        }

        var verifier = Verifier(rootCertificates: CertificateStore(trustedRoots)) { RFC5280Policy(validationTime: time) }
        let result = await verifier.validate(leaf: chain[0], intermediates: CertificateStore(chain.dropFirst()))
        guard case .validCertificate(let validated) = result else {
            throw .rejected("the x5c chain does not verify to a trusted root")
        }
        let path = Array(validated)
        guard path.count >= 3, Self.has(Self.signingCertificateMarker, path[0]), Self.has(Self.intermediateMarker, path[1]) else {
            throw .rejected("the x5c chain is not an App Store signing chain")
        }
        guard let key = P256.Signing.PublicKey(path[0].publicKey) else {
            throw .rejected("the signing certificate's key is not P-256")
        }
        let validFrom = path.map(\.notValidBefore).max()!, validUntil = path.map(\.notValidAfter).min()!
        remembered.remember(x5c, key: key, validity: validFrom...validUntil)
        return key
    }

    private static func has(_ marker: String, _ certificate: Certificate) -> Bool {
        certificate.extensions.contains { "\($0.oid)" == marker }
    }
}

/// A compact JWS of Apple's, read but not yet believed: its header's chain, its payload, and what
/// its signature covers.
private struct CompactJWS {
    let x5c: [String]
    let signingInput: Data
    let signature: Data
    let payload: Data

    init(_ jws: some StringProtocol) throws(SignatureError) {
        guard jws.utf8.count <= SignedPayloadVerifier.maximumBytes else {
            throw .rejected("the JWS is larger than \(SignedPayloadVerifier.maximumBytes) bytes")
        }
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerBytes = Data(base64URL: parts[0]), let payload = Data(base64URL: parts[1]),
              let signature = Data(base64URL: parts[2])
        else { throw .malformed("not a compact JWS (three base64url parts)") }
        guard let header = (try? JSONValue.parse(headerBytes))?.members else {
            throw .malformed("the JWS header is not a JSON object")
        }
        guard case .string("ES256")? = header["alg"] else { throw .rejected("the JWS algorithm is not ES256") }
        let chain = if case .array(let entries)? = header["x5c"] { entries } else { [JSONValue]() }
        let x5c = chain.compactMap { if case .string(let certificate) = $0 { certificate } else { nil } }
        guard x5c.count == chain.count, x5c.count >= 2 else { throw .rejected("the JWS header has no x5c certificate chain") }
        guard x5c.count <= SignedPayloadVerifier.maximumChainLength else {
            throw .rejected("the x5c chain has \(x5c.count) certificates; Apple sends \(SignedPayloadVerifier.maximumChainLength)")
        }
        self.x5c = x5c
        self.payload = payload
        self.signature = signature
        signingInput = Data("\(parts[0]).\(parts[1])".utf8)
    }

    func payload(verifiedWith key: P256.Signing.PublicKey) throws(SignatureError) -> Data {
        guard let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signature),
              key.isValidSignature(signature, for: signingInput)
        else { throw .rejected("the JWS signature does not verify") }
        return payload
    }
}

/// The chains a verifier validated, by their `x5c` text: their signing key and when all their
/// certificates are valid. Bounded: Apple rotates its chains rarely, and a flood of others is
/// forgotten rather than kept.
private final class ValidatedChains: Sendable {
    private let chains = Mutex<[[String]: (key: P256.Signing.PublicKey, validity: ClosedRange<Date>)]>([:])
    static let capacity = 64

    /// The signing key of `x5c` when it validated before and all its certificates are valid at `time`.
    func key(of x5c: [String], at time: Date) -> P256.Signing.PublicKey? {
        chains.withLock { chains in
            guard let chain = chains[x5c], chain.validity.contains(time) else { return nil }
            return chain.key
        }
    }

    func remember(_ x5c: [String], key: P256.Signing.PublicKey, validity: ClosedRange<Date>) {
        chains.withLock { chains in
            if chains.count >= Self.capacity { chains.removeAll() }
            chains[x5c] = (key, validity)
        }
    }
}

/// Why a signed payload was refused.
public enum SignatureError: Error, Sendable, CustomStringConvertible {
    /// Not a JWS at all, or unreadable parts.
    case malformed(String)
    /// A JWS whose signature or chain does not hold.
    case rejected(String)

    public var description: String {
        switch self {
        case .malformed(let reason), .rejected(let reason): reason
        }
    }
}

/// Base64url without padding (RFC 7515), as JWS and JWT use it.
extension Data {
    init?(base64URL text: some StringProtocol) {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        self.init(base64Encoded: base64)
    }

    func base64URLEncoded() -> String {
        var text = base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        while text.hasSuffix("=") { text.removeLast() }
        return text
    }
}
