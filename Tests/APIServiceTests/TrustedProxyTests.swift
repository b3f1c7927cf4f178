import APIService
import FleetConfiguration
import Testing

/// Behind a proxy every caller has the proxy's address: only a configured proxy's word about the
/// real caller is believed, and Apple's notifications never share a budget with junk.
@Suite struct TrustedProxyTests {
    @Test func onlyATrustedProxyNamesTheCaller() throws {
        let proxies = try TrustedProxies(parsing: "10.0.0.0/8, 127.0.0.1, fd00::/8")
        #expect(proxies.client(peer: "10.1.2.3", forwarded: nil, xForwardedFor: "203.0.113.7") == "203.0.113.7")
        #expect(proxies.client(peer: "198.51.100.1", forwarded: nil, xForwardedFor: "203.0.113.7") == "198.51.100.1",
                "an untrusted peer's header is anyone's writing")
        // Walking back from the right: a client's own forged entry stays behind the first untrusted hop.
        #expect(proxies.client(peer: "127.0.0.1", forwarded: nil, xForwardedFor: "1.1.1.1, 203.0.113.7, 10.9.9.9")
                == "203.0.113.7")
        // Only the header the proxies set is read: a client's own Forwarded passes an X-Forwarded-For proxy untouched.
        #expect(proxies.client(peer: "fd00::1", forwarded: #"for="[2001:db8::5]:4711";proto=https"#, xForwardedFor: "9.9.9.9")
                == "9.9.9.9")
        #expect(proxies.client(peer: "10.0.0.2", forwarded: "for=192.0.2.60:8080", xForwardedFor: nil) == "10.0.0.2")
        let rfc7239 = try TrustedProxies(parsing: "10.0.0.0/8, fd00::/8", header: .forwarded)
        #expect(rfc7239.client(peer: "fd00::1", forwarded: #"for="[2001:db8::5]:4711";proto=https"#, xForwardedFor: "9.9.9.9")
                == "2001:db8::5")
        #expect(rfc7239.client(peer: "10.0.0.2", forwarded: "for=192.0.2.60:8080, for=10.1.1.1", xForwardedFor: "9.9.9.9") == "192.0.2.60")
        #expect(TrustedProxies.none.client(peer: "10.1.2.3", forwarded: nil, xForwardedFor: "203.0.113.7") == "10.1.2.3")
        #expect(throws: TrustedProxiesError.self) { try TrustedProxies(parsing: "10.0.0.0/33") }
        #expect(throws: TrustedProxiesError.self) { try TrustedProxies(parsing: "proxy.example.com") }
    }

    @Test func behindATrustedProxyEachCallerHasABucketOfItsOwn() async throws {
        try await APIHarness.with(configure: {
            ($0.clientRateLimit, $0.clientRateBurst) = (0.01, 2)
            $0.trustedProxies = try! TrustedProxies(parsing: "127.0.0.1")
        }) { api in
            for _ in 0..<2 { _ = try await api.get("/v1/subscriptions?account_id=x", auth: .none, forwardedFor: "203.0.113.7") }
            let limited = try await api.get("/v1/subscriptions?account_id=x", auth: .none, forwardedFor: "203.0.113.7")
            #expect(limited.status == 429)
            let other = try await api.get("/v1/subscriptions?account_id=x", auth: .none, forwardedFor: "198.51.100.9")
            #expect(other.status == 401, "another caller behind the same proxy is not limited")
            // The proxy appends only X-Forwarded-For; the caller's own rotating Forwarded changes nothing.
            var statuses: [Int] = []
            for hop in 1...3 {
                statuses.append(try await api.get(
                    "/v1/subscriptions?account_id=x", auth: .none, forwardedFor: "198.51.100.9", forwarded: "for=192.0.2.\(hop)").status)
            }
            #expect(statuses == [401, 429, 429])
        }
        // Without the proxy configured the header is ignored: everyone is the proxy.
        try await APIHarness.with(configure: { ($0.clientRateLimit, $0.clientRateBurst) = (0.01, 2) }) { api in
            for _ in 0..<2 { _ = try await api.get("/v1/subscriptions?account_id=x", auth: .none, forwardedFor: "203.0.113.7") }
            let other = try await api.get("/v1/subscriptions?account_id=x", auth: .none, forwardedFor: "198.51.100.9")
            #expect(other.status == 429)
        }
    }

    /// Forty junk notifications a second from behind the same proxy as Apple: Apple's own
    /// notification is still taken.
    @Test func junkNeverStarvesApplesNotifications() async throws {
        try await APIHarness.with(configure: { ($0.clientRateLimit, $0.clientRateBurst) = (0.01, 2) }) { api in
            let (otid, _) = try await api.registered()
            var statuses: [Int] = []
            for _ in 0..<40 {
                statuses.append(try await api.post(APIHarness.notificationPath, ["signedPayload": "a.b.c"], auth: .none).status)
            }
            #expect(statuses.contains(429), "junk is limited by its address")
            let apple = try await api.post(APIHarness.notificationPath, try api.signedNotification(otid: otid), auth: .none)
            #expect(apple.status == 200)
            #expect(apple.json["status"] as? String == "queued")
        }
    }
}
