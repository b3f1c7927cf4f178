import AppStoreSimulator
import Foundation
import X509

/// A certificate authority of the test's own, shaped like Apple's for App Store signing (the
/// simulator's, by another name): a root, an intermediate and a signing certificate carrying
/// Apple's marker extensions. The test configures `root` as the trusted root, then signs
/// notifications and Server API payloads as Apple would.
public struct TestCA: Sendable {
    private let chain: SimulatorSigningChain

    public var root: Certificate { chain.root }

    public init(name: String = "Test Root CA") throws {
        chain = try SimulatorSigningChain(name: name)
    }

    /// A compact JWS of `payload`, ES256, with the chain in `x5c` as Apple sends it.
    public func sign(_ payload: [String: Any]) throws -> String {
        chain.sign(Array(try JSONSerialization.data(withJSONObject: payload)))
    }
}

/// Base64url without padding, as JWS and JWT use it.
extension Data {
    public init?(base64URL text: some StringProtocol) {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        self.init(base64Encoded: base64)
    }

    public var base64URL: String {
        base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
