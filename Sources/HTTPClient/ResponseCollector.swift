import CCurl
#if canImport(Glibc)
import Glibc
#else
import Darwin
#endif

/// Gathers one response's header fields and body while curl receives them.
///
/// curl hands received bytes to C function pointers, which cannot capture Swift state. The
/// client therefore registers `collectBody` and `collectHeaderLine` below together with an
/// unretained pointer to its collector (CURLOPT_WRITEDATA / CURLOPT_HEADERDATA). The client
/// owns the collector for its whole life, so the pointer outlives every transfer, and the
/// callbacks run only inside `curl_easy_perform` on the client's own thread.
final class ResponseCollector {
    private(set) var headers = HTTPHeaders()
    private(set) var body: [UInt8] = []
    /// The most body bytes this response may keep; nil for no limit.
    private var bodyLimit: Int?
    /// Whether the body went past `bodyLimit`, so that the transfer was stopped there.
    private(set) var reachedBodyLimit = false
    /// The addresses `openPublicSocket` refused in this transfer, described for the error.
    fileprivate(set) var refusedAddresses: [String] = []

    /// Forgets the previous response and sets the next one's body limit.
    func reset(bodyLimit: Int?) {
        headers = HTTPHeaders()
        body = []
        self.bodyLimit = bodyLimit
        reachedBodyLimit = false
        refusedAddresses = []
    }

    /// The opaque pointer curl passes back to the callbacks.
    var curlContext: UnsafeMutableRawPointer {
        Unmanaged.passUnretained(self).toOpaque()
    }

    fileprivate static func from(_ context: UnsafeMutableRawPointer?) -> ResponseCollector {
        Unmanaged<ResponseCollector>.fromOpaque(context!).takeUnretainedValue()
    }

    /// Keeps `bytes` up to the body limit; false when the limit cut them, to stop the transfer.
    fileprivate func append(body bytes: UnsafeRawBufferPointer) -> Bool {
        guard let bodyLimit, body.count + bytes.count > bodyLimit else {
            body.append(contentsOf: bytes)
            return true
        }
        body.append(contentsOf: bytes.prefix(bodyLimit - body.count))
        reachedBodyLimit = true
        return false
    }

    /// Takes one raw header line ("Name: value\r\n"). A status line starts a new response:
    /// after interim responses (100 Continue, 103 Early Hints) only the last one's fields stay.
    fileprivate func append(headerLine bytes: UnsafeRawBufferPointer) {
        if bytes.starts(with: "HTTP/".utf8) {
            headers = HTTPHeaders()
            return
        }
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")) else { return }  // the blank line ending the head
        headers.append(name: Self.trimmed(bytes[..<colon]), value: Self.trimmed(bytes[(colon + 1)...]))
    }

    /// The bytes as text without the spaces, tabs and line ends around them. Byte by byte, since
    /// every response's header lines pass here (through Characters it cost 15% of a worker's CPU).
    private static func trimmed(_ bytes: Slice<UnsafeRawBufferPointer>) -> String {
        func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0D || byte == 0x0A }
        guard let first = bytes.firstIndex(where: { !isSpace($0) }), let last = bytes.lastIndex(where: { !isSpace($0) })
        else { return "" }
        return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[first...last]), as: UTF8.self)
    }
}

/// CURLOPT_WRITEFUNCTION: curl calls it with each piece of the body. Returning fewer bytes
/// than given aborts the transfer (CURLE_WRITE_ERROR): that is how a body past the limit stops.
func collectBody(
    data: UnsafeMutablePointer<CChar>?, size: Int, count: Int, context: UnsafeMutableRawPointer?
) -> Int {
    let length = size * count
    let tookAll = ResponseCollector.from(context).append(body: UnsafeRawBufferPointer(start: data, count: length))
    return tookAll ? length : 0
}

/// CURLOPT_HEADERFUNCTION: curl calls it once per complete header line, status line included.
func collectHeaderLine(
    data: UnsafeMutablePointer<CChar>?, size: Int, count: Int, context: UnsafeMutableRawPointer?
) -> Int {
    let length = size * count
    ResponseCollector.from(context).append(headerLine: UnsafeRawBufferPointer(start: data, count: length))
    return length
}

/// CURLOPT_OPENSOCKETFUNCTION, set when only public addresses may be reached: curl calls it with
/// each address it is about to connect to, after resolving the host, so a name that resolves to a
/// private address (or starts to, after it was checked) is caught here. It opens the socket as curl
/// would, or refuses with CURL_SOCKET_BAD, which curl reports as a failed connection.
func openPublicSocket(
    context: UnsafeMutableRawPointer?, purpose: curlsocktype, address: UnsafeMutablePointer<curl_sockaddr>?
) -> curl_socket_t {
    guard let address else { return -1 }
    let target = address.pointee
    // `addr` is only the start of a sockaddr_in6: read it in place, never as a copy of the field.
    let socketAddress = UnsafeRawPointer(address) + MemoryLayout<curl_sockaddr>.offset(of: \.addr)!
    guard let ip = IPAddress(socketAddress: socketAddress, family: target.family) else {
        ResponseCollector.from(context).refusedAddresses.append("an address of family \(target.family)")
        return -1
    }
    if let range = ip.nonPublicRange {
        ResponseCollector.from(context).refusedAddresses.append("\(ip) (\(range))")
        return -1
    }
    return socket(target.family, target.socktype, target.protocol)
}

