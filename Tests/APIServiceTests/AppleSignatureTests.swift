import AppStore
import APIService
import Foundation
import TestSupport
import Testing
import X509

/// V2 notifications are believed only when Apple signed them, for this app: a genuine notification
/// Apple signed verifies against the built-in Apple Root CA - G3; nothing else does.
@Suite struct AppleSignatureTests {
    /// A TEST notification Apple signed on 2022-09-02 (Fixtures/SOURCES.md); its signing
    /// certificate was valid from 2021-08-25 to 2023-09-24.
    static func genuine() throws -> String {
        let url = try #require(Bundle.module.url(
            forResource: "aporat-store-receipt-validator__tests__AppleAppStore__fixtures__test-notification-signed-payload",
            withExtension: "json", subdirectory: "Fixtures"))
        let object = try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any]
        return try #require(object?["signedPayload"] as? String)
    }

    static let signedDate = Date(timeIntervalSince1970: 1_662_122_492.884)

    @Test func theBuiltInRootIsApplesByItsPublishedFingerprint() throws {
        let url = try #require(Bundle.module.url(forResource: "AppleRootCA-G3", withExtension: "der", subdirectory: "Fixtures"))
        let published = try Data(contentsOf: url)
        #expect(AppleRootCertificate.sha256Hex(published) == AppleRootCertificate.fingerprint)
        #expect(try AppleRootCertificate.load() == Certificate(derEncoded: Array(published)))
    }

    @Test func aGenuineAppleNotificationVerifiesAtItsSignedDate() async throws {
        let verifier = SignedPayloadVerifier(trustedRoots: [try AppleRootCertificate.load()])
        let payload = try await verifier.payload(of: try Self.genuine(), at: Self.signedDate)
        let object = try JSONSerialization.jsonObject(with: payload) as? [String: Any]
        #expect(object?["notificationType"] as? String == "TEST")
        #expect((object?["data"] as? [String: Any])?["bundleId"] as? String == "com.Abilities")
    }

    @Test func itDoesNotVerifyOnceItsCertificateExpiredOrAgainstAnotherRoot() async throws {
        let apple = SignedPayloadVerifier(trustedRoots: [try AppleRootCertificate.load()])
        await #expect(throws: SignatureError.self) { try await apple.payload(of: try Self.genuine(), at: Date()) }
        let other = SignedPayloadVerifier(trustedRoots: [try TestCA().root])
        await #expect(throws: SignatureError.self) { try await other.payload(of: try Self.genuine(), at: Self.signedDate) }
    }

    /// A chain validated once is remembered, never trusted further than it was: the signature of
    /// every payload is still checked, and the certificates' validity at the time asked.
    @Test func aRememberedChainStillChecksTheSignatureAndTheTime() async throws {
        let verifier = SignedPayloadVerifier(trustedRoots: [try AppleRootCertificate.load()])
        let genuine = try Self.genuine()
        _ = try await verifier.payload(of: genuine, at: Self.signedDate)
        _ = try await verifier.payload(of: genuine, at: Self.signedDate)  // remembered
        await #expect(throws: SignatureError.self) { try await verifier.payload(of: genuine, at: Date()) }
        let parts = genuine.split(separator: ".").map(String.init)
        let payload = try #require(Data(base64URL: parts[1]))
        var object = try #require(try JSONSerialization.jsonObject(with: payload) as? [String: Any])
        object["notificationType"] = "REFUND"
        let altered = parts[0] + "." + (try JSONSerialization.data(withJSONObject: object)).base64URL + "." + parts[2]
        await #expect(performing: { try await verifier.payload(of: altered, at: Self.signedDate) }, throws: { error in
            "\(error)".contains("signature does not verify")
        })
    }

    /// A thread of its own checks a payload without a hop to Swift's pool once its chain is known:
    /// not before (the chain's validation is async), and never beyond what the async check allows.
    @Test func aKnownChainIsCheckedWithoutAValidationAndNoLessStrictly() async throws {
        let verifier = SignedPayloadVerifier(trustedRoots: [try AppleRootCertificate.load()])
        let genuine = try Self.genuine()
        #expect(try verifier.payloadOfKnownChain(of: genuine, at: Self.signedDate) == nil, "no chain is known yet")
        let validated = try await verifier.payload(of: genuine, at: Self.signedDate)
        #expect(try verifier.payloadOfKnownChain(of: genuine, at: Self.signedDate) == validated)
        #expect(try verifier.payloadOfKnownChain(of: genuine, at: Date()) == nil, "the certificates expired: validate again")
        let parts = genuine.split(separator: ".").map(String.init)
        let forged = parts[0] + "." + Data(#"{"notificationType":"REFUND"}"#.utf8).base64URL + "." + parts[2]
        #expect(performing: { try verifier.payloadOfKnownChain(of: forged, at: Self.signedDate) }, throws: { error in
            "\(error)".contains("signature does not verify")
        })
        // A header is known by its exact text: one character changed, the length kept, is a chain not seen.
        let header = Array(parts[0].utf8)
        let middle = header.count / 2
        let changed = header[..<middle] + [header[middle] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")]
            + header[(middle + 1)...]
        let otherHeader = String(decoding: changed, as: UTF8.self) + "." + parts[1] + "." + parts[2]
        #expect(try verifier.payloadOfKnownChain(of: otherHeader, at: Self.signedDate) == nil)
    }

    /// A worker's thread validates a chain it has not seen on itself: the async validation's work
    /// runs on the calling thread, with no hop to Swift's pool and no thread waiting for a task.
    @Test func aNewChainIsValidatedOnTheCallingThread() async throws {
        let verifier = SignedPayloadVerifier(trustedRoots: [try AppleRootCertificate.load()])
        let genuine = try Self.genuine()
        let (payload, ranHere) = try await onOwnThread {
            let caller = pthread_self()
            let ranOn = CallingThreadExecutor.run { () async -> pthread_t in
                await Task.yield()
                return pthread_self()
            }
            return (try verifier.payloadOnThisThread(of: genuine, at: Self.signedDate), pthread_equal(ranOn, caller) != 0)
        }
        #expect(ranHere, "the task's jobs ran on the thread that asked")
        #expect(try verifier.payloadOfKnownChain(of: genuine, at: Self.signedDate) == payload, "the validated chain is remembered")
        let other = SignedPayloadVerifier(trustedRoots: [try AppleRootCertificate.load()])
        #expect(throws: SignatureError.self, "an expired chain is refused here as in the async check") {
            try other.payloadOnThisThread(of: genuine, at: Date())
        }
    }

    @Test func aLongerChainOrAnOversizedPayloadIsRefusedUnread() async throws {
        let verifier = SignedPayloadVerifier(trustedRoots: [try AppleRootCertificate.load()])
        let parts = try Self.genuine().split(separator: ".").map(String.init)
        let header = try #require(Data(base64URL: parts[0]))
        var object = try #require(try JSONSerialization.jsonObject(with: header) as? [String: Any])
        let chain = try #require(object["x5c"] as? [String])
        object["x5c"] = chain + [chain[2]]
        let longer = try JSONSerialization.data(withJSONObject: object).base64URL + "." + parts[1] + "." + parts[2]
        await #expect(performing: { try await verifier.payload(of: longer, at: Self.signedDate) }, throws: { error in
            "\(error)".contains("Apple sends 3")
        })
        let oversized = parts[0] + "." + String(repeating: "A", count: SignedPayloadVerifier.maximumBytes) + "." + parts[2]
        await #expect(performing: { try await verifier.payload(of: oversized, at: Self.signedDate) }, throws: { error in
            "\(error)".contains("larger than")
        })
    }
}
