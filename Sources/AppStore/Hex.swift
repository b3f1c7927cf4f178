extension Sequence<UInt8> {
    /// Two lowercase hex digits per byte, as digests are written.
    public var hex: String {
        map { byte in
            let digits = String(byte, radix: 16)
            return digits.count == 1 ? "0" + digits : digits
        }.joined()
    }
}
