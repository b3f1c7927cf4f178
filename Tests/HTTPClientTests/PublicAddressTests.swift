import Foundation
import HTTPClient
import Testing
import TestSupport

/// `publicAddressesOnly`: the address curl is about to connect to, once resolved, must be public.
@Suite struct PublicAddressTests {
    @Test(arguments: ["127.0.0.1", "localhost"])
    func aLoopbackServerIsNeverConnectedTo(host: String) async throws {
        let server = try TestHTTPServer()
        defer { server.stop() }
        let url = "http://\(host):\(server.port)/"

        let error = try await #require(throws: HTTPError.self) {
            try await onOwnThread { try HTTPClient(configuration: .init(publicAddressesOnly: true)).get(url: url) }
        }

        #expect(error.kind == .refusedAddress)
        #expect(!error.isRetryable)
        #expect(error.message.contains("(loopback)"), "\(error)")
        #expect(server.acceptedConnections == 0)
        // Without the check, the same client reaches it.
        let response = try await onOwnThread { try HTTPClient().get(url: url) }
        #expect(response.status == 200)
    }

    @Test func everyNonPublicRangeIsRecognised() {
        let nonPublic = [
            "0.0.0.0", "10.1.2.3", "100.64.0.1", "127.0.0.1", "169.254.169.254", "172.16.0.1", "172.31.255.255",
            "192.168.0.1", "224.0.0.1", "255.255.255.255", "::", "::1", "fe80::1", "fc00::1", "fd12:3456::1",
            "ff02::1", "::ffff:10.0.0.1", "64:ff9b::a9fe:a9fe", "2002:7f00:1::",
            // Issue 23: the IPv4-translated form and the local-use NAT64 prefix passed.
            "::ffff:0:127.0.0.1", "64:ff9b:1::7f00:1", "64:ff9b:1::808:808", "100::1",
        ]
        let isPublic = [
            "8.8.8.8", "1.1.1.1", "172.32.0.1", "100.128.0.1", "2606:4700:4700::1111", "::ffff:8.8.8.8", "::ffff:0:8.8.8.8",
            "64:ff9b::808:808",
        ]
        for text in nonPublic {
            #expect(IPAddress(text)?.nonPublicRange != nil, "\(text)")
        }
        for text in isPublic {
            #expect(IPAddress(text).map { $0.nonPublicRange == nil } == true, "\(text)")
        }
        #expect(IPAddress("[fe80::1%eth0]")?.nonPublicRange == "link-local")
        #expect(IPAddress("hooks.example.com") == nil)
        #expect(IPAddress.resolve("localhost").allSatisfy { $0.nonPublicRange == "loopback" })
    }
}
