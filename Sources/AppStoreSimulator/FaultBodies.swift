import Foundation

/// The broken answers a real App Store (or the proxies in front of it) sometimes gives.
enum FaultBodies {
    /// What a load balancer shows while the service is down.
    static let serviceUnavailablePage = Array("""
        <!DOCTYPE html><html><head><title>503 Service Unavailable</title></head>\
        <body><h1>Service Unavailable</h1><p>The server is temporarily unable to service your request.</p></body></html>
        """.utf8)

    /// A gateway error page where JSON was expected.
    static let badGatewayPage = Array("""
        <!DOCTYPE html><html><head><title>502 Bad Gateway</title></head>\
        <body><h1>Bad Gateway</h1><p>The proxy server received an invalid response from an upstream server.</p></body></html>
        """.utf8)

    /// Valid JSON in which every field has the wrong type.
    static let wrongTypes = Array("""
        {"status":"OK","environment":7,"receipt":[],"latest_receipt_info":"none","pending_renewal_info":{"0":null}}
        """.utf8)

    /// Whether a verifyReceipt request's receipt is among `share` of receipts that always get garbage:
    /// its `receipt-data` picks it, so every retry of the job meets the same answer.
    static func isBroken(receiptRequest body: some Collection<UInt8>, share: Double) -> Bool {
        guard share > 0 else { return false }
        let receipt = (try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])?["receipt-data"] as? String ?? ""
        // FNV-1a: stable across processes, unlike Hasher.
        let hash = receipt.utf8.reduce(UInt64(0xCBF2_9CE4_8422_2325)) { ($0 ^ UInt64($1)) &* 0x100_0000_01B3 }
        return Double(hash % 1_000_000) < share * 1_000_000
    }

    /// The first half of an answer, as a connection cut short or a broken cache serves it.
    static func truncated(_ answer: [UInt8]) -> [UInt8] { Array(answer.prefix(max(1, answer.count / 2))) }

    /// One of the garbage answers, chosen by `draw` in 0..<1: (HTTP status, content type, body).
    static func garbage(draw: Double, truncating answer: [UInt8]) -> (httpStatus: Int, contentType: String, body: [UInt8]) {
        switch draw {
        case ..<(1.0 / 3): (502, "text/html; charset=UTF-8", badGatewayPage)
        case ..<(2.0 / 3): (200, "application/json", truncated(answer))
        default: (200, "application/json", wrongTypes)
        }
    }
}
