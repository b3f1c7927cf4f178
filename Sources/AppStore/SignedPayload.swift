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
        if let key = remembered.key(of: parsed.encodedHeader, at: time) { return try parsed.payload(verifiedWith: key) }
        let key = try await validate(parsed.chain(), at: time)
        remembered.remember(parsed.encodedHeader, key: key.key, validity: key.validity)
        return try parsed.payload(verifiedWith: key.key)
    }

    /// The payload of `jws` when its header (its chain) validated before and still holds at `time`
    /// and its signature holds; nil when the chain must be validated first (`payload(of:at:)`,
    /// async). For a thread of its own, which then needs no hop to Swift's pool for all but a
    /// chain's first payload, and reads no header it has read before.
    public func payloadOfKnownChain(of jws: some StringProtocol, at time: Date) throws(SignatureError) -> Data? {
        let parsed = try CompactJWS(jws)
        guard let key = remembered.key(of: parsed.encodedHeader, at: time) else { return nil }
        return try parsed.payload(verifiedWith: key)
    }

    /// The payload of `jws` once its chain and signature hold at `time`, for a thread of the
    /// fleet's own: a chain validated before is only looked up; a new one (once per chain Apple
    /// signs with) is validated on this very thread.
    public func payloadOnThisThread(of jws: String, at time: Date) throws(SignatureError) -> Data {
        if let payload = try payloadOfKnownChain(of: jws, at: time) { return payload }
        let checked = CallingThreadExecutor.run { () async -> Result<Data, SignatureError> in
            do throws(SignatureError) { return .success(try await payload(of: jws, at: time)) } catch { return .failure(error) }
        }
        return try checked.get()
    }

    /// Validates an `x5c` chain at `time`; returns its signing key and when all its certificates are valid.
    private func validate(
        _ x5c: [String], at time: Date
    ) async throws(SignatureError) -> (key: P256.Signing.PublicKey, validity: ClosedRange<Date>) {
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
        return (key, validFrom...validUntil)
    }

    private static func has(_ marker: String, _ certificate: Certificate) -> Bool {
        certificate.extensions.contains { "\($0.oid)" == marker }
    }
}

/// A compact JWS of Apple's, split but not yet believed. It is read as bytes: the header, with
/// its chain of three certificates, is most of a payload's size, and Apple sends the same header
/// text with every payload one chain signed, so a header seen before is never decoded again.
private struct CompactJWS {
    /// The header as sent (base64url).
    let encodedHeader: ArraySlice<UInt8>
    /// What the signature covers: the header and the payload as sent, with the dot between.
    let signingInput: ArraySlice<UInt8>
    let signature: Data
    let payload: Data

    init(_ jws: some StringProtocol) throws(SignatureError) {
        guard jws.utf8.count <= SignedPayloadVerifier.maximumBytes else {
            throw .rejected("the JWS is larger than \(SignedPayloadVerifier.maximumBytes) bytes")
        }
        let bytes = Array(jws.utf8), dot = UInt8(ascii: ".")
        guard let first = bytes.firstIndex(of: dot), let second = bytes[(first + 1)...].firstIndex(of: dot),
              !bytes[(second + 1)...].contains(dot),
              let payload = Data(base64URL: bytes[(first + 1)..<second]), let signature = Data(base64URL: bytes[(second + 1)...])
        else { throw .malformed("not a compact JWS (three base64url parts)") }
        encodedHeader = bytes[..<first]
        signingInput = bytes[..<second]
        self.payload = payload
        self.signature = signature
    }

    /// The header's `x5c` chain, once the header says ES256 and carries two or three certificates.
    func chain() throws(SignatureError) -> [String] {
        guard let decoded = Data(base64URL: encodedHeader) else { throw .malformed("not a compact JWS (three base64url parts)") }
        guard let header = (try? JSONValue.parse(decoded))?.members else {
            throw .malformed("the JWS header is not a JSON object")
        }
        guard case .string("ES256")? = header["alg"] else { throw .rejected("the JWS algorithm is not ES256") }
        let chain = if case .array(let entries)? = header["x5c"] { entries } else { [JSONValue]() }
        let x5c = chain.compactMap { if case .string(let certificate) = $0 { certificate } else { nil } }
        guard x5c.count == chain.count, x5c.count >= 2 else { throw .rejected("the JWS header has no x5c certificate chain") }
        guard x5c.count <= SignedPayloadVerifier.maximumChainLength else {
            throw .rejected("the x5c chain has \(x5c.count) certificates; Apple sends \(SignedPayloadVerifier.maximumChainLength)")
        }
        return x5c
    }

    func payload(verifiedWith key: P256.Signing.PublicKey) throws(SignatureError) -> Data {
        guard let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signature),
              key.isValidSignature(signature, for: signingInput)
        else { throw .rejected("the JWS signature does not verify") }
        return payload
    }
}

/// The headers whose chains a verifier validated, by their exact base64url text (what the
/// signature covers, so a header is believed only with a signature its key made): the chain's
/// signing key and when all its certificates are valid. Bounded: Apple rotates its chains
/// rarely, and a flood of others is forgotten rather than kept.
private final class ValidatedChains: Sendable {
    private let chains = Mutex<[HeaderText: (key: P256.Signing.PublicKey, validity: ClosedRange<Date>)]>([:])
    static let capacity = 64

    /// The signing key of the chain `header` carries, when it validated before and all its certificates are valid at `time`.
    func key(of header: ArraySlice<UInt8>, at time: Date) -> P256.Signing.PublicKey? {
        chains.withLock { chains in
            guard let chain = chains[HeaderText(header)], chain.validity.contains(time) else { return nil }
            return chain.key
        }
    }

    func remember(_ header: ArraySlice<UInt8>, key: P256.Signing.PublicKey, validity: ClosedRange<Date>) {
        chains.withLock { chains in
            if chains.count >= Self.capacity { chains.removeAll() }
            chains[HeaderText(ArraySlice(Array(header)))] = (key, validity)  // a copy: not the whole JWS kept alive
        }
    }
}

/// A JWS header's text as a dictionary key, hashed in one pass and compared with `memcmp`. Some
/// 4 KB for each payload: `ArraySlice<UInt8>`'s own conformance hashes and compares it a byte at a
/// time, which was 6% of a Server API verification's instructions (callgrind, 2026-11-27).
private struct HeaderText: Hashable {
    let bytes: ArraySlice<UInt8>

    init(_ bytes: ArraySlice<UInt8>) {
        self.bytes = bytes
    }

    func hash(into hasher: inout Hasher) {
        bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
    }

    static func == (left: HeaderText, right: HeaderText) -> Bool {
        guard left.bytes.count == right.bytes.count else { return false }
        return left.bytes.withUnsafeBytes { leftBytes in
            right.bytes.withUnsafeBytes { rightBytes in
                leftBytes.isEmpty || memcmp(leftBytes.baseAddress!, rightBytes.baseAddress!, leftBytes.count) == 0
            }
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

/// Base64url without padding (RFC 7515), as JWS and JWT use it: translated byte by byte to and
/// from Foundation's base64 (a JWS header of Apple's is some 3 KB, read for every payload).
extension Data {
    init?(base64URL text: some StringProtocol) {
        self.init(base64URL: text.utf8)
    }

    init?(base64URL text: some Collection<UInt8>) {
        var base64 = [UInt8]()
        base64.reserveCapacity(text.count + 3)
        for byte in text {
            switch byte {
            case UInt8(ascii: "-"): base64.append(UInt8(ascii: "+"))
            case UInt8(ascii: "_"): base64.append(UInt8(ascii: "/"))
            default: base64.append(byte)
            }
        }
        base64 += repeatElement(UInt8(ascii: "="), count: (4 - base64.count % 4) % 4)
        self.init(base64Encoded: Data(base64))
    }

    func base64URLEncoded() -> String {
        var encoded = base64EncodedData()
        while encoded.last == UInt8(ascii: "=") { encoded.removeLast() }
        for index in encoded.indices where encoded[index] == UInt8(ascii: "+") || encoded[index] == UInt8(ascii: "/") {
            encoded[index] = encoded[index] == UInt8(ascii: "+") ? UInt8(ascii: "-") : UInt8(ascii: "_")
        }
        return String(decoding: encoded, as: UTF8.self)
    }
}
