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

    /// Forgets the previous response.
    func reset() {
        headers = HTTPHeaders()
        body = []
    }

    /// The opaque pointer curl passes back to the callbacks.
    var curlContext: UnsafeMutableRawPointer {
        Unmanaged.passUnretained(self).toOpaque()
    }

    fileprivate static func from(_ context: UnsafeMutableRawPointer?) -> ResponseCollector {
        Unmanaged<ResponseCollector>.fromOpaque(context!).takeUnretainedValue()
    }

    fileprivate func append(body bytes: UnsafeRawBufferPointer) {
        body.append(contentsOf: bytes)
    }

    /// Takes one raw header line ("Name: value\r\n"). A status line starts a new response:
    /// after interim responses (100 Continue, 103 Early Hints) only the last one's fields stay.
    fileprivate func append(headerLine bytes: UnsafeRawBufferPointer) {
        let line = String(decoding: bytes, as: UTF8.self)
        if line.hasPrefix("HTTP/") {
            headers = HTTPHeaders()
            return
        }
        guard let colon = line.firstIndex(of: ":") else { return }  // the blank line ending the head
        headers.append(
            name: String(line[..<colon]).trimmingWhitespace(),
            value: String(line[line.index(after: colon)...]).trimmingWhitespace()
        )
    }
}

/// CURLOPT_WRITEFUNCTION: curl calls it with each piece of the body. Returning fewer bytes
/// than given would abort the transfer; we always take them all.
func collectBody(
    data: UnsafeMutablePointer<CChar>?, size: Int, count: Int, context: UnsafeMutableRawPointer?
) -> Int {
    let length = size * count
    ResponseCollector.from(context).append(body: UnsafeRawBufferPointer(start: data, count: length))
    return length
}

/// CURLOPT_HEADERFUNCTION: curl calls it once per complete header line, status line included.
func collectHeaderLine(
    data: UnsafeMutablePointer<CChar>?, size: Int, count: Int, context: UnsafeMutableRawPointer?
) -> Int {
    let length = size * count
    ResponseCollector.from(context).append(headerLine: UnsafeRawBufferPointer(start: data, count: length))
    return length
}

extension String {
    /// Without leading and trailing whitespace ("\r\n" included), without needing Foundation.
    func trimmingWhitespace() -> String {
        String(drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed())
    }
}
