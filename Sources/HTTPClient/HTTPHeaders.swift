/// HTTP header fields in order, looked up by name without regard to case (`content-type`
/// finds `Content-Type`), as HTTP requires.
public struct HTTPHeaders: Sendable, Equatable, ExpressibleByDictionaryLiteral {
    public struct Field: Sendable, Equatable {
        public var name: String
        public var value: String

        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    /// Every field, in the order it was added or received; a name may repeat.
    public private(set) var fields: [Field]

    public init(_ fields: [Field] = []) {
        self.fields = fields
    }

    public init(dictionaryLiteral elements: (String, String)...) {
        fields = elements.map { Field(name: $0.0, value: $0.1) }
    }

    /// The first value of the field called `name`, or nil if there is none.
    public subscript(name: String) -> String? {
        fields.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    /// Every value of the fields called `name`, in order.
    public func values(for name: String) -> [String] {
        fields.filter { $0.name.lowercased() == name.lowercased() }.map(\.value)
    }

    /// Adds a field after the others, keeping any with the same name.
    public mutating func append(name: String, value: String) {
        fields.append(Field(name: name, value: value))
    }
}
