import AppStore

/// Encodes `Encodable` values straight into compact JSON bytes, for the ledger's `jsonb`
/// parameters. Foundation's `JSONEncoder` builds a tree of boxed values first and checks every
/// value against its special types on the way: for the write batch of each verification that was
/// 12% of a worker's CPU (docs/performance.md).
///
/// It writes what `JSONEncoder` writes for the ledger's types (JSONStreamEncoderTests compares the
/// two): objects from keyed containers, nil members left out (`encodeIfPresent`), arrays, strings,
/// numbers and booleans. Types with `Date`, `Data` or `URL` members, which `JSONEncoder` special-cases,
/// must not be given to it; nested containers and super-encoders make `encode` throw.
enum JSONStreamEncoder {
    static func encode(_ value: some Encodable) throws -> [UInt8] {
        let output = Output()
        try output.write(value)
        if let unsupported = output.unsupported {
            throw EncodingError.invalidValue(value, .init(codingPath: [], debugDescription: "JSONStreamEncoder does not support \(unsupported)"))
        }
        return output.bytes
    }

    /// The bytes written so far, shared by every container of one encoding.
    final class Output {
        var bytes: [UInt8] = []
        /// What a value asked for that this encoder does not do; `encode` throws it at the end,
        /// since the containers' methods cannot throw.
        var unsupported: String?

        /// A container's stand-in for what is not supported: it records the request and writes
        /// nowhere.
        func refuse(_ what: String) -> ValueEncoder {
            unsupported = unsupported ?? what
            return ValueEncoder(output: Output())
        }

        func write(_ value: some Encodable) throws {
            let encoder = ValueEncoder(output: self)
            try value.encode(to: encoder)
            encoder.close()
        }

        func write(_ text: String) { JSONText.appendString(text, to: &bytes) }

        func write(number: some BinaryInteger) { bytes += number.description.utf8 }

        func write(number: Double) throws {
            guard number.isFinite else {
                throw EncodingError.invalidValue(number, .init(codingPath: [], debugDescription: "JSON has no \(number)"))
            }
            bytes += number.description.utf8
        }

        func write(_ flag: Bool) { bytes += (flag ? "true" : "false").utf8 }
    }

    /// The encoder of one value: it opens the container the value asks for and closes it once
    /// the value's `encode(to:)` has returned.
    final class ValueEncoder: Encoder {
        enum Opened { case nothing, object, array, single }

        let output: Output
        var opened = Opened.nothing
        /// Whether the open object or array has a member yet (a comma goes before the next).
        var hasMember = false
        var codingPath: [any CodingKey] { [] }
        var userInfo: [CodingUserInfoKey: Any] { [:] }

        init(output: Output) { self.output = output }

        func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
            open(.object, UInt8(ascii: "{"))
            return KeyedEncodingContainer(Keyed<Key>(encoder: self))
        }

        func unkeyedContainer() -> any UnkeyedEncodingContainer {
            open(.array, UInt8(ascii: "["))
            return Unkeyed(encoder: self)
        }

        func singleValueContainer() -> any SingleValueEncodingContainer {
            opened = .single
            return Single(output: output)
        }

        private func open(_ kind: Opened, _ bracket: UInt8) {
            guard opened == .nothing else { return }  // asked twice: the same container goes on
            opened = kind
            output.bytes.append(bracket)
        }

        /// Starts the next member: a comma after the first.
        func nextMember() {
            if hasMember { output.bytes.append(UInt8(ascii: ",")) }
            hasMember = true
        }

        func close() {
            switch opened {
            case .object: output.bytes.append(UInt8(ascii: "}"))
            case .array: output.bytes.append(UInt8(ascii: "]"))
            case .nothing: output.bytes += "{}".utf8  // as JSONEncoder writes a value that encoded nothing
            case .single: break
            }
        }
    }

    struct Keyed<Key: CodingKey>: KeyedEncodingContainerProtocol {
        let encoder: ValueEncoder
        var codingPath: [any CodingKey] { [] }
        private var output: Output { encoder.output }

        private func key(_ key: Key) {
            encoder.nextMember()
            output.write(key.stringValue)
            output.bytes.append(UInt8(ascii: ":"))
        }

        mutating func encodeNil(forKey key: Key) { self.key(key); output.bytes += "null".utf8 }
        mutating func encode(_ value: Bool, forKey key: Key) { self.key(key); output.write(value) }
        mutating func encode(_ value: String, forKey key: Key) { self.key(key); output.write(value) }
        mutating func encode(_ value: Double, forKey key: Key) throws { self.key(key); try output.write(number: value) }
        mutating func encode(_ value: Float, forKey key: Key) throws { self.key(key); try output.write(number: Double(value)) }
        mutating func encode(_ value: Int, forKey key: Key) { self.key(key); output.write(number: value) }
        mutating func encode(_ value: Int8, forKey key: Key) { self.key(key); output.write(number: value) }
        mutating func encode(_ value: Int16, forKey key: Key) { self.key(key); output.write(number: value) }
        mutating func encode(_ value: Int32, forKey key: Key) { self.key(key); output.write(number: value) }
        mutating func encode(_ value: Int64, forKey key: Key) { self.key(key); output.write(number: value) }
        mutating func encode(_ value: UInt, forKey key: Key) { self.key(key); output.write(number: value) }
        mutating func encode(_ value: UInt8, forKey key: Key) { self.key(key); output.write(number: value) }
        mutating func encode(_ value: UInt16, forKey key: Key) { self.key(key); output.write(number: value) }
        mutating func encode(_ value: UInt32, forKey key: Key) { self.key(key); output.write(number: value) }
        mutating func encode(_ value: UInt64, forKey key: Key) { self.key(key); output.write(number: value) }
        mutating func encode(_ value: some Encodable, forKey key: Key) throws { self.key(key); try output.write(value) }

        mutating func nestedContainer<NestedKey: CodingKey>(
            keyedBy keyType: NestedKey.Type, forKey key: Key
        ) -> KeyedEncodingContainer<NestedKey> {
            output.refuse("nested containers").container(keyedBy: keyType)
        }

        mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
            output.refuse("nested containers").unkeyedContainer()
        }

        mutating func superEncoder() -> any Encoder { output.refuse("super encoders") }
        mutating func superEncoder(forKey key: Key) -> any Encoder { output.refuse("super encoders") }
    }

    struct Unkeyed: UnkeyedEncodingContainer {
        let encoder: ValueEncoder
        var codingPath: [any CodingKey] { [] }
        private(set) var count = 0
        private var output: Output { encoder.output }

        private mutating func element() {
            encoder.nextMember()
            count += 1
        }

        mutating func encodeNil() { element(); output.bytes += "null".utf8 }
        mutating func encode(_ value: Bool) { element(); output.write(value) }
        mutating func encode(_ value: String) { element(); output.write(value) }
        mutating func encode(_ value: Double) throws { element(); try output.write(number: value) }
        mutating func encode(_ value: Float) throws { element(); try output.write(number: Double(value)) }
        mutating func encode(_ value: Int) { element(); output.write(number: value) }
        mutating func encode(_ value: Int8) { element(); output.write(number: value) }
        mutating func encode(_ value: Int16) { element(); output.write(number: value) }
        mutating func encode(_ value: Int32) { element(); output.write(number: value) }
        mutating func encode(_ value: Int64) { element(); output.write(number: value) }
        mutating func encode(_ value: UInt) { element(); output.write(number: value) }
        mutating func encode(_ value: UInt8) { element(); output.write(number: value) }
        mutating func encode(_ value: UInt16) { element(); output.write(number: value) }
        mutating func encode(_ value: UInt32) { element(); output.write(number: value) }
        mutating func encode(_ value: UInt64) { element(); output.write(number: value) }
        mutating func encode(_ value: some Encodable) throws { element(); try output.write(value) }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
            output.refuse("nested containers").container(keyedBy: keyType)
        }

        mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
            output.refuse("nested containers").unkeyedContainer()
        }

        mutating func superEncoder() -> any Encoder { output.refuse("super encoders") }
    }

    struct Single: SingleValueEncodingContainer {
        let output: Output
        var codingPath: [any CodingKey] { [] }

        mutating func encodeNil() { output.bytes += "null".utf8 }
        mutating func encode(_ value: Bool) { output.write(value) }
        mutating func encode(_ value: String) { output.write(value) }
        mutating func encode(_ value: Double) throws { try output.write(number: value) }
        mutating func encode(_ value: Float) throws { try output.write(number: Double(value)) }
        mutating func encode(_ value: Int) { output.write(number: value) }
        mutating func encode(_ value: Int8) { output.write(number: value) }
        mutating func encode(_ value: Int16) { output.write(number: value) }
        mutating func encode(_ value: Int32) { output.write(number: value) }
        mutating func encode(_ value: Int64) { output.write(number: value) }
        mutating func encode(_ value: UInt) { output.write(number: value) }
        mutating func encode(_ value: UInt8) { output.write(number: value) }
        mutating func encode(_ value: UInt16) { output.write(number: value) }
        mutating func encode(_ value: UInt32) { output.write(number: value) }
        mutating func encode(_ value: UInt64) { output.write(number: value) }
        mutating func encode(_ value: some Encodable) throws { try output.write(value) }
    }
}
