/// SplitMix64: a tiny, fast generator whose whole future follows from its seed, so a receipt's
/// lifecycle is the same on every request and in every process.
struct SeededRandom: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64, index: Int) {
        state = Self.mix(seed ^ Self.mix(UInt64(truncatingIfNeeded: index) &+ 0x9E37_79B9_7F4A_7C15))
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        return Self.mix(state)
    }

    /// A time offset in `range` (milliseconds), rounded to whole seconds as Apple's dates are.
    mutating func offset(in range: ClosedRange<Int64>) -> Int64 {
        Int64.random(in: range, using: &self) / 1000 * 1000
    }

    static func mix(_ value: UInt64) -> UInt64 {
        var z = value
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Apple-looking identifiers (15 digits starting with 1) that are unique per (receipt, subscription,
/// transaction) within one seed, for the first 2^28 receipts and 2^16 transactions per subscription and deliberately not in purchase order: a bijective scramble of the
/// packed position, so no two positions share an id and sorting by id tells nothing.
struct IdentifierScheme: Sendable {
    private let seedMask: UInt64
    private let index: UInt64

    private static let bits: UInt64 = 46
    private static let mask: UInt64 = (1 << bits) - 1

    init(seed: UInt64, index: Int) {
        seedMask = SeededRandom.mix(seed) & Self.mask
        self.index = UInt64(truncatingIfNeeded: index) & ((1 << 28) - 1)
    }

    func transactionID(chain: Int, sequence: Int) -> UInt64 {
        100_000_000_000_000 + scramble(chain: chain, sequence: sequence, salt: 0)
    }

    func webOrderLineItemID(chain: Int, sequence: Int) -> UInt64 {
        100_000_000_000_000 + scramble(chain: chain, sequence: sequence, salt: 0x2545_F491_4F6C_DD1D)
    }

    /// Where a transaction id of this seed came from: the receipt's index, the subscription's chain
    /// and the transaction's sequence (the Server API is asked by transaction id, not by receipt).
    /// Nil when the id is not one this scheme makes.
    static func position(ofTransactionID id: UInt64, seed: UInt64) -> (index: Int, chain: Int, sequence: Int)? {
        guard id >= 100_000_000_000_000, id - 100_000_000_000_000 <= mask else { return nil }
        var x = id - 100_000_000_000_000
        x = Self.unshift(x, by: 21)
        x = (x &* Self.inverse(0x2_7BB2_EE68_7B0B)) & mask
        x = Self.unshift(x, by: 23)
        x = (x &* Self.inverse(0x5DEE_CE66_D)) & mask
        let position = x ^ (SeededRandom.mix(seed) & mask)
        return (Int(position >> 18), Int(position >> 16 & 0x3), Int(position & 0xFFFF))
    }

    /// Undoes `x ^= x >> shift` on 46-bit numbers.
    private static func unshift(_ value: UInt64, by shift: UInt64) -> UInt64 {
        var x = value
        var step = shift
        while step < bits {
            x ^= x >> step
            step *= 2
        }
        return x & mask
    }

    /// The inverse of an odd number modulo 2^46 (Newton's iteration doubles the good bits each step).
    private static func inverse(_ odd: UInt64) -> UInt64 {
        var x = odd
        for _ in 0..<6 { x = x &* (2 &- odd &* x) }
        return x & mask
    }

    private func scramble(chain: Int, sequence: Int, salt: UInt64) -> UInt64 {
        let position = index << 18 | UInt64(chain & 0x3) << 16 | UInt64(sequence & 0xFFFF)
        // Each step is a bijection on 46-bit numbers: xor with a constant, multiply by an odd number,
        // xor-shift right.
        var x = position ^ ((seedMask ^ salt) & Self.mask)
        x = (x &* 0x5DEE_CE66_D) & Self.mask
        x ^= x >> 23
        x = (x &* 0x2_7BB2_EE68_7B0B) & Self.mask
        x ^= x >> 21
        return x
    }
}
