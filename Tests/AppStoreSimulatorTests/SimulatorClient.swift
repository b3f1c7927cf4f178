import HTTPClient
import HTTPTypes
import NIOCore
import TestSupport

/// A test's view of the simulator over real HTTP on loopback, in Hummingbird's request and
/// response types, so that the tests read as the routes are written. Each request goes through
/// the fleet's own client (curl) on a thread of its own: curl blocks, and Swift's pool must not.
struct SimulatorClient: Sendable {
    let port: Int

    struct Answer: Sendable {
        let status: HTTPTypes.HTTPResponse.Status
        let headers: HTTPFields
        let body: ByteBuffer
    }

    func execute(uri: String, method: HTTPRequest.Method, headers: HTTPFields = [:], body: ByteBuffer? = nil)
        async throws -> Answer
    {
        let url = "http://127.0.0.1:\(port)\(uri)"
        let sent = HTTPHeaders(headers.map { HTTPHeaders.Field(name: $0.name.rawName, value: $0.value) })
        let bytes = body.map { Array($0.readableBytesView) } ?? []
        let answer = try await onOwnThread {
            let client = try HTTPClient()
            return switch method {
            case .post: try client.post(url: url, json: bytes, headers: sent)
            case .put: try client.put(url: url, json: bytes, headers: sent)
            case .delete: try client.delete(url: url, headers: sent)
            default: try client.get(url: url, headers: sent)
            }
        }
        var received = HTTPFields()
        for field in answer.headers.fields {
            if let name = HTTPField.Name(field.name) { received.append(HTTPField(name: name, value: field.value)) }
        }
        return Answer(status: .init(code: answer.status), headers: received, body: ByteBuffer(bytes: answer.body))
    }
}
