import Foundation
import Hummingbird

/// An answer other than success, as the API's clients see it: an HTTP status and a JSON body
/// `{"code": "…", "message": "…"}` with a stable code and a sentence that says what to do.
/// Messages never hold a token, a receipt or a secret.
public struct APIError: Error, HTTPResponseError, Sendable, CustomStringConvertible {
    public let status: HTTPResponse.Status
    public let code: String
    public let message: String
    public var headers: HTTPFields = [:]

    public init(_ status: HTTPResponse.Status, _ code: String, _ message: String, headers: HTTPFields = [:]) {
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers
    }

    public var description: String { "\(status.code) \(code): \(message)" }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        response
    }

    var response: Response {
        var headers = headers
        headers[.contentType] = "application/json"
        let body = try! JSONEncoder().encode(["code": code, "message": message])
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }

    static func badRequest(_ code: String = "bad_request", _ message: String) -> APIError {
        APIError(.badRequest, code, message)
    }

    static let unauthorized = APIError(
        .unauthorized, "unauthorized",
        "send a configured API token as 'Authorization: Bearer TOKEN'",
        headers: [.wwwAuthenticate: "Bearer realm=\"receiptfleet\""])

    static func bodyTooLarge(limit: Int) -> APIError {
        APIError(.contentTooLarge, "body_too_large", "the request body is larger than \(limit) bytes")
    }

    static func rateLimited(retryAfter: Duration) -> APIError {
        APIError(.tooManyRequests, "rate_limited", "too many requests from this client; try again after the Retry-After seconds",
                 headers: [.retryAfter: "\(retryAfter.wholeSecondsRoundedUp)"])
    }

    static func unavailable(_ code: String, _ message: String, retryAfter: Duration) -> APIError {
        APIError(.serviceUnavailable, code, message, headers: [.retryAfter: "\(retryAfter.wholeSecondsRoundedUp)"])
    }

    /// An error from Hummingbird itself (no such route, wrong method, body too large), in the same shape.
    static func from(_ error: any HTTPResponseError) -> APIError {
        switch error.status {
        case .notFound: APIError(.notFound, "not_found", "there is no such endpoint; see docs/api.md")
        case .methodNotAllowed: APIError(.methodNotAllowed, "method_not_allowed", "this endpoint does not take that method")
        case .contentTooLarge: APIError(.contentTooLarge, "body_too_large", "the request body is too large")
        default: APIError(error.status, "http_\(error.status.code)", error.status.reasonPhrase)
        }
    }
}

extension Duration {
    /// For Retry-After: at least 1.
    var wholeSecondsRoundedUp: Int64 {
        let (seconds, attoseconds) = components
        return max(1, seconds + (attoseconds > 0 ? 1 : 0))
    }
}

extension APIError {
    /// `id`, a client's name for something (an account, a transaction to look up), once it is 1 to
    /// 256 bytes of UTF-8 and holds no control character: PostgreSQL refuses a NUL in text, and an
    /// index row a few kilobytes long, so either must be refused before anything is asked or
    /// stored. Counted in bytes: one character may be any number of combining marks.
    static func checkedID(_ id: String, _ name: String) throws(APIError) -> String {
        guard !id.isEmpty, id.utf8.count <= 256, !id.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw .badRequest("invalid_\(name)", "'\(name)' must be 1 to 256 bytes of UTF-8, none of them a control character")
        }
        return id
    }
}
