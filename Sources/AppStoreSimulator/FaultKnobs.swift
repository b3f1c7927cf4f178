import Foundation

/// How badly the simulated App Store behaves. Rates are probabilities per request (0...1) and are
/// exclusive: one draw decides between an HTTP 503 page, a garbage body, a dropped connection, a
/// reset mid-response, a 21005 or a real answer, so each happens at exactly its configured rate and
/// their sum must not exceed 1.
public struct FaultKnobs: Sendable, Equatable, CustomStringConvertible {
    /// Delay before each verifyReceipt answer.
    public var latency: Latency
    /// Probability of `{"status":21005}` (the receipt server is temporarily unavailable).
    public var unavailableRate: Double
    /// Probability of an HTTP 503 with an HTML page.
    public var serviceUnavailableRate: Double
    /// Probability of a body no client should accept: an HTML 502 page, truncated JSON or wrong types.
    public var garbageRate: Double
    /// Share of receipts (picked by their bytes, the same ones every time) answered with garbage on
    /// every request: HTTP 200 and half a body, as a broken proxy's cache would serve them. Unlike
    /// `garbageRate`'s draws, their jobs fail every attempt and end in the dead letters.
    public var garbageReceiptShare: Double
    /// Probability that the connection is closed without a byte of answer.
    public var dropRate: Double
    /// Probability that the answer stops halfway: its head and half its body, then a TCP reset.
    public var resetRate: Double
    /// The account's primary shared secret: requests whose `password` is neither it nor the
    /// receipt's app's own (`appSharedSecrets`) get 21004; with neither set, any password goes.
    public var sharedSecret: String?
    /// App-specific shared secrets, by bundle id.
    public var appSharedSecrets: [String: String] = [:]
    /// Requests allowed in any one-second window; those beyond are counted as violations (and answered).
    public var rateLimit: Int?

    /// The defaults describe a perfect App Store: instant, always right, no secret, no limit.
    public init(latency: Latency = .zero, unavailableRate: Double = 0, serviceUnavailableRate: Double = 0,
                garbageRate: Double = 0, garbageReceiptShare: Double = 0, dropRate: Double = 0, resetRate: Double = 0,
                sharedSecret: String? = nil, rateLimit: Int? = nil) {
        self.latency = latency
        self.unavailableRate = unavailableRate
        self.serviceUnavailableRate = serviceUnavailableRate
        self.garbageRate = garbageRate
        self.garbageReceiptShare = garbageReceiptShare
        self.dropRate = dropRate
        self.resetRate = resetRate
        self.sharedSecret = sharedSecret
        self.rateLimit = rateLimit
    }

    /// The knobs for logs: says whether a shared secret is set, never what it is.
    public var description: String {
        "latency \(latency), 21005 rate \(unavailableRate), 503 rate \(serviceUnavailableRate), "
            + "garbage rate \(garbageRate), garbage receipt share \(garbageReceiptShare), drop rate \(dropRate), reset rate \(resetRate), shared secret \(sharedSecret == nil ? "none" : "set"), "
            + "app-specific secrets for \(appSharedSecrets.isEmpty ? "none" : appSharedSecrets.keys.sorted().joined(separator: ",")), "
            + "rate limit \(rateLimit.map { "\($0)/s" } ?? "none")"
    }

    /// Why these knobs cannot be used, or nil when they can.
    public var problem: String? {
        let rates = [unavailableRate, serviceUnavailableRate, garbageRate, dropRate, resetRate]
        if rates.contains(where: { !(0...1).contains($0) }) { return "each rate must be between 0 and 1" }
        if rates.reduce(0, +) > 1 { return "the 21005, 503, garbage, drop and reset rates must add up to at most 1" }
        if !(0...1).contains(garbageReceiptShare) { return "the garbage receipt share must be between 0 and 1" }
        if let rateLimit, rateLimit < 1 { return "the rate limit must be at least 1 request per second" }
        return nil
    }
}

/// Response delay, uniform in `mean ± spread` milliseconds.
public struct Latency: Sendable, Equatable, CustomStringConvertible {
    public let meanMs: Int
    /// Half the width of the range; at most `meanMs`, so delays are never negative.
    public let spreadMs: Int

    /// No delay.
    public static let zero = Latency(meanMs: 0, spreadMs: 0)

    /// Negative values count as zero; a spread wider than the mean is narrowed to it.
    public init(meanMs: Int, spreadMs: Int = 0) {
        self.meanMs = max(0, meanMs)
        self.spreadMs = max(0, min(spreadMs, meanMs))
    }

    /// Reads `150ms±50ms`, `150ms+-50ms`, `0ms`, `2s`, `1.5s±200ms` (a bare number means ms).
    public init?(parsing text: String) {
        let parts = text.replacingOccurrences(of: "+-", with: "±").split(separator: "±", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), let mean = Self.milliseconds(parts[0]) else { return nil }
        var spread = 0
        if parts.count == 2 {
            guard let value = Self.milliseconds(parts[1]) else { return nil }
            spread = value
        }
        self.init(meanMs: mean, spreadMs: spread)
    }

    /// A delay to wait for one response.
    func sample() -> Int {
        spreadMs == 0 ? meanMs : Int.random(in: (meanMs - spreadMs)...(meanMs + spreadMs))
    }

    /// As the knob is written: `150ms±50ms`, `0ms`.
    public var description: String { spreadMs == 0 ? "\(meanMs)ms" : "\(meanMs)ms±\(spreadMs)ms" }

    private static func milliseconds(_ text: Substring) -> Int? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        let (number, scale): (Substring, Double) =
            if trimmed.hasSuffix("ms") { (trimmed.dropLast(2), 1) }
            else if trimmed.hasSuffix("s") { (trimmed.dropLast(1), 1000) }
            else { (Substring(trimmed), 1) }
        guard let value = Double(number), value >= 0, value.isFinite else { return nil }
        return Int((value * scale).rounded())
    }
}
