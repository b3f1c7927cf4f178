/// A verifyReceipt answer that cannot be read: not JSON, not a JSON object, or without a status.
///
/// It carries the HTTP status and the start of the body — Apple's (or a proxy's) own words —
/// and nothing from the request: Apple's bodies never echo the receipt, and this type never sees
/// the request.
public struct ResponseDecodingError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Problem: Sendable, Equatable {
        case notJSON
        case notAnObject
        case noStatus
    }

    /// How many bytes of the body `bodyPrefix` keeps.
    public static let bodyPrefixLength = 200

    public let problem: Problem
    public let httpStatus: Int
    /// The first `bodyPrefixLength` bytes of the body, as text with control characters escaped.
    public let bodyPrefix: String

    init(_ problem: Problem, httpStatus: Int, body: some Collection<UInt8>) {
        self.problem = problem
        self.httpStatus = httpStatus
        let text = String(decoding: body.prefix(Self.bodyPrefixLength), as: UTF8.self)
        // Escaped control characters keep a multi-line HTML error page on one log line.
        var prefix = ""
        for scalar in text.unicodeScalars {
            if scalar.properties.generalCategory == .control {
                prefix += scalar.escaped(asASCII: true)
            } else {
                prefix.unicodeScalars.append(scalar)
            }
        }
        bodyPrefix = prefix
    }

    public var description: String {
        let what = switch problem {
        case .notJSON: "a body that is not JSON"
        case .notAnObject: "JSON that is not an object"
        case .noStatus: "a JSON object without a readable status"
        }
        return "verifyReceipt answered HTTP \(httpStatus) with \(what) (body starts: \"\(bodyPrefix)\"). "
            + "The verification can be retried; if this persists, check the verifyReceipt URL and "
            + "any proxy between the fleet and Apple."
    }
}
