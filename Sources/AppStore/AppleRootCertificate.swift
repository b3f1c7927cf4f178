import Crypto
import Foundation
import X509

/// Apple Root CA - G3, the root of every App Store signature. It ships with the product, so that
/// V2 notifications and the Server API's signed transactions are checked against Apple's own root
/// unless an operator explicitly names another; its bytes are trusted only after they match the
/// fingerprint Apple publishes.
public enum AppleRootCertificate {
    /// SHA-256 of the certificate's DER, as Apple publishes it (apple.com/certificateauthority).
    public static let fingerprint = "63343ABFB89A6A03EBB57E9B3F5FA7BE7C4F5C756F3017B3A8C488C3653E9179"

    /// The certificate as Apple publishes it (AppleRootCA-G3.cer, DER), base64.
    private static let base64DER = [
        "MIICQzCCAcmgAwIBAgIILcX8iNLFS5UwCgYIKoZIzj0EAwMwZzEbMBkGA1UEAwwSQXBwbGUgUm9vdCBDQSAtIEczMSYwJAYD",
        "VQQLDB1BcHBsZSBDZXJ0aWZpY2F0aW9uIEF1dGhvcml0eTETMBEGA1UECgwKQXBwbGUgSW5jLjELMAkGA1UEBhMCVVMwHhcN",
        "MTQwNDMwMTgxOTA2WhcNMzkwNDMwMTgxOTA2WjBnMRswGQYDVQQDDBJBcHBsZSBSb290IENBIC0gRzMxJjAkBgNVBAsMHUFw",
        "cGxlIENlcnRpZmljYXRpb24gQXV0aG9yaXR5MRMwEQYDVQQKDApBcHBsZSBJbmMuMQswCQYDVQQGEwJVUzB2MBAGByqGSM49",
        "AgEGBSuBBAAiA2IABJjpLz1AcqTtkyJygRMc3RCV8cWjTnHcFBbZDuWmBSp3ZHtfTjjTuxxEtX/1H7YyYl3J6YRbTzBPEVoA",
        "/VhYDKX1DyxNB0cTddqXl5dvMVztK517IDvYuVTZXpmkOlEKMaNCMEAwHQYDVR0OBBYEFLuw3qFYM4iapIqZ3r6966/ayySr",
        "MA8GA1UdEwEB/wQFMAMBAf8wDgYDVR0PAQH/BAQDAgEGMAoGCCqGSM49BAMDA2gAMGUCMQCD6cHEFl4aXTQY2e3v9GwOAEZL",
        "uN+yRhHFD/3meoyhpmvOwgPUnPWTxnS4at+qIxUCMG1mihDK1A3UT82NQz60imOlM27jbdoXt2QfyFMm+YhidDkLF1vLUagM",
        "6BgD56KyKA==",
    ].joined()

    /// The certificate, once its bytes are checked against `fingerprint`.
    public static func load() throws -> Certificate {
        guard let der = Data(base64Encoded: base64DER), sha256Hex(der) == fingerprint else {
            throw SignatureError.rejected("the built-in Apple Root CA - G3 does not match its fingerprint")
        }
        return try Certificate(derEncoded: Array(der))
    }

    /// Uppercase hex of the SHA-256 of `bytes`, as certificate fingerprints are written.
    public static func sha256Hex(_ bytes: some DataProtocol) -> String {
        SHA256.hash(data: bytes).hex.uppercased()
    }

    /// Root certificates an operator names instead (a test CA): PEM, one or more, or DER (as Apple
    /// publishes AppleRootCA-G3.cer).
    public static func certificates(inFile path: String) throws(CertificateFileError) -> [Certificate] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw CertificateFileError(path: path, reason: "cannot read the file")
        }
        do {
            if let text = String(data: data, encoding: .utf8), text.contains("-----BEGIN CERTIFICATE-----") {
                return try text.components(separatedBy: "-----END CERTIFICATE-----").dropLast().map {
                    try Certificate(pemEncoded: $0.trimmingCharacters(in: .whitespacesAndNewlines) + "\n-----END CERTIFICATE-----")
                }
            }
            return [try Certificate(derEncoded: Array(data))]
        } catch {
            throw CertificateFileError(path: path, reason: "not a PEM or DER certificate (\(error))")
        }
    }
}

public struct CertificateFileError: Error, CustomStringConvertible {
    public let path: String
    public let reason: String
    public var description: String { "root certificate \(path): \(reason)" }
}
