import CCurl
import CCurlShim

/// A blocking HTTP/1.1 client over one libcurl easy handle.
///
/// The handle is reused for every request, so curl keeps the connection to each server open
/// between requests (keep-alive). A client is not `Sendable`: create it on the thread that
/// uses it (a `Lane`, say) and keep it there. Calls block that thread until the answer arrives
/// or a timeout passes; never call them from Swift's cooperative thread pool.
public final class HTTPClient {
    public let configuration: HTTPClientConfiguration
    /// The `CURL *`, owned by this client alone.
    private let handle: UnsafeMutableRawPointer
    /// curl writes its detailed error message here (CURLOPT_ERRORBUFFER).
    private let errorBuffer: UnsafeMutablePointer<CChar>
    private let collector = ResponseCollector()

    /// Creates a client; it connects only when the first request is made.
    public init(configuration: HTTPClientConfiguration = HTTPClientConfiguration()) throws(HTTPError) {
        let globalStatus = CurlGlobal.initialized
        guard globalStatus == CURLE_OK else {
            throw HTTPError(globalStatus, detail: "curl_global_init failed", url: "")
        }
        guard let handle = curl_easy_init() else {
            throw HTTPError(CURLE_FAILED_INIT, detail: "curl_easy_init failed", url: "")
        }
        self.configuration = configuration
        self.handle = handle
        errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE))
    }

    deinit {
        curl_easy_cleanup(handle)  // closes the connections it kept alive
        errorBuffer.deallocate()
    }

    /// POSTs a JSON body and returns the server's answer, whatever its status.
    /// Sends `Content-Type: application/json` unless `headers` sets a content type.
    ///
    /// `headers` go out as given, so they must not contain line breaks. A field with an empty
    /// value stops curl from sending its own header of that name (such as `Accept`).
    public func post(
        url: String, json body: [UInt8], headers: HTTPHeaders = [:]
    ) throws(HTTPError) -> HTTPResponse {
        try perform(url: url, headers: Self.json(headers), body: body)
    }

    /// PUTs a JSON body and returns the server's answer, whatever its status. The body and
    /// `headers` go out as they do for `post`.
    public func put(url: String, json body: [UInt8], headers: HTTPHeaders = [:]) throws(HTTPError) -> HTTPResponse {
        try perform(url: url, headers: Self.json(headers), body: body, method: "PUT")
    }

    /// `headers` with `Content-Type: application/json` unless they set a content type.
    private static func json(_ headers: HTTPHeaders) -> HTTPHeaders {
        var headers = headers
        if headers["Content-Type"] == nil { headers.append(name: "Content-Type", value: "application/json") }
        return headers
    }

    /// GETs `url` and returns the server's answer, whatever its status. `headers` go out as
    /// they do for `post`.
    public func get(url: String, headers: HTTPHeaders = [:]) throws(HTTPError) -> HTTPResponse {
        try perform(url: url, headers: headers, body: nil)
    }

    /// DELETEs `url` and returns the server's answer, whatever its status. `headers` go out as
    /// they do for `post`.
    public func delete(url: String, headers: HTTPHeaders = [:]) throws(HTTPError) -> HTTPResponse {
        try perform(url: url, headers: headers, body: nil, method: "DELETE")
    }

    /// Runs one request: a POST of `body`, or without one a GET; `method` names another (PUT
    /// sends `body` as a POST would, DELETE none).
    private func perform(url: String, headers: HTTPHeaders, body: [UInt8]?, method: String? = nil) throws(HTTPError) -> HTTPResponse {
        // Back to curl's defaults, so nothing of the previous request (method, body, headers)
        // carries over. Open connections, the DNS cache and TLS sessions stay.
        curl_easy_reset(handle)
        collector.reset(bodyLimit: configuration.maxBodyBytes)
        errorBuffer[0] = 0

        // An empty `Expect:` stops curl from sending `Expect: 100-continue` for large bodies,
        // which costs a round trip (or a one-second wait for servers that ignore it).
        let lines = ["Expect:"] + headers.fields.map { "\($0.name): \($0.value)" }
        var headerList: UnsafeMutablePointer<curl_slist>?
        defer { curl_slist_free_all(headerList) }
        for line in lines {
            guard let extended = curl_slist_append(headerList, line) else {
                throw HTTPError(CURLE_OUT_OF_MEMORY, detail: "", url: url)
            }
            headerList = extended
        }

        let config = configuration
        try check([
            rf_curl_setopt_pointer(handle, CURLOPT_ERRORBUFFER, errorBuffer),
            rf_curl_setopt_string(handle, CURLOPT_URL, url),
            // Only web schemes: a URL must never make curl read a file or speak another protocol.
            rf_curl_setopt_string(handle, CURLOPT_PROTOCOLS_STR, "http,https"),
            // No signals: curl's timeouts would otherwise use SIGALRM, unsafe with many threads.
            rf_curl_setopt_long(handle, CURLOPT_NOSIGNAL, 1),
            rf_curl_setopt_long(handle, CURLOPT_CONNECTTIMEOUT_MS, config.connectTimeout.curlMilliseconds),
            rf_curl_setopt_long(handle, CURLOPT_TIMEOUT_MS, config.totalTimeout.curlMilliseconds),
            rf_curl_setopt_long(handle, CURLOPT_SSL_VERIFYPEER, config.verifiesTLS ? 1 : 0),
            rf_curl_setopt_long(handle, CURLOPT_SSL_VERIFYHOST, config.verifiesTLS ? 2 : 0),
            config.caFile.map { rf_curl_setopt_string(handle, CURLOPT_CAINFO, $0) } ?? CURLE_OK,
            rf_curl_setopt_string(handle, CURLOPT_USERAGENT, config.userAgent),
            rf_curl_setopt_pointer(handle, CURLOPT_HTTPHEADER, headerList),
            rf_curl_setopt_write_callback(handle, CURLOPT_WRITEFUNCTION, collectBody),
            rf_curl_setopt_pointer(handle, CURLOPT_WRITEDATA, collector.curlContext),
            rf_curl_setopt_write_callback(handle, CURLOPT_HEADERFUNCTION, collectHeaderLine),
            rf_curl_setopt_pointer(handle, CURLOPT_HEADERDATA, collector.curlContext),
            method.map { rf_curl_setopt_string(handle, CURLOPT_CUSTOMREQUEST, $0) } ?? CURLE_OK,
        ] + proxyOptions(config.proxy) + addressCheckOptions(config.publicAddressesOnly), url: url)

        let result: CURLcode
        if let body {
            // curl reads the body from stdin when CURLOPT_POSTFIELDS is NULL, so even an empty body
            // needs a real pointer. curl does not copy the body: the pointer must live through perform.
            let bytes = body.isEmpty ? [0] : body
            result = bytes.withUnsafeBytes { buffer in
                let options = [
                    rf_curl_setopt_long(handle, CURLOPT_POST, 1),
                    rf_curl_setopt_long(handle, CURLOPT_POSTFIELDSIZE, body.count),
                    rf_curl_setopt_pointer(handle, CURLOPT_POSTFIELDS, UnsafeMutableRawPointer(mutating: buffer.baseAddress)),
                ]
                return options.first { $0 != CURLE_OK } ?? curl_easy_perform(handle)
            }
        } else {  // a GET (curl_easy_reset made it the method again), or `method`
            result = curl_easy_perform(handle)
        }
        // A body cut at the limit stops the transfer with a write error; the answer itself is whole.
        let cutAtLimit = result == CURLE_WRITE_ERROR && collector.reachedBodyLimit
        if !collector.refusedAddresses.isEmpty, result != CURLE_OK {
            throw HTTPError(refused: collector.refusedAddresses, url: url)
        }
        if !cutAtLimit { try check([result], url: url) }
        return response()
    }

    private func proxyOptions(_ proxy: HTTPClientConfiguration.Proxy) -> [CURLcode] {
        switch proxy {
        case .environment: []
        // An empty proxy is curl's way to use none even when http_proxy and the like are set.
        case .none: [rf_curl_setopt_string(handle, CURLOPT_PROXY, "")]
        case .url(let proxy): [rf_curl_setopt_string(handle, CURLOPT_PROXY, proxy)]
        }
    }

    /// curl calls `openPublicSocket` with each address it is about to connect to, once resolved.
    private func addressCheckOptions(_ publicOnly: Bool) -> [CURLcode] {
        guard publicOnly else { return [] }
        return [
            rf_curl_setopt_opensocket_callback(handle, CURLOPT_OPENSOCKETFUNCTION, openPublicSocket),
            rf_curl_setopt_pointer(handle, CURLOPT_OPENSOCKETDATA, collector.curlContext),
        ]
    }

    /// Throws the first failure among `codes`, with curl's detailed message.
    private func check(_ codes: [CURLcode], url: String) throws(HTTPError) {
        guard let failure = codes.first(where: { $0 != CURLE_OK }) else { return }
        throw HTTPError(failure, detail: String(cString: errorBuffer), url: url)
    }

    /// The response of the transfer that just succeeded.
    private func response() -> HTTPResponse {
        var status = 0
        var effectiveURL: UnsafePointer<CChar>?
        _ = rf_curl_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status)
        _ = rf_curl_getinfo_string(handle, CURLINFO_EFFECTIVE_URL, &effectiveURL)
        return HTTPResponse(
            status: status,
            headers: collector.headers,
            body: collector.body,
            timings: HTTPTimings(
                nameLookup: seconds(CURLINFO_NAMELOOKUP_TIME),
                connect: seconds(CURLINFO_CONNECT_TIME),
                tlsHandshake: seconds(CURLINFO_APPCONNECT_TIME),
                firstByte: seconds(CURLINFO_STARTTRANSFER_TIME),
                total: seconds(CURLINFO_TOTAL_TIME)
            ),
            url: effectiveURL.map { String(cString: $0) } ?? ""
        )
    }

    private func seconds(_ info: CURLINFO) -> Duration {
        var seconds = 0.0
        _ = rf_curl_getinfo_double(handle, info, &seconds)
        return .seconds(seconds)
    }
}

/// The compiler keeps a client on one thread: curl handles must not be used concurrently.
@available(*, unavailable)
extension HTTPClient: Sendable {}

/// curl_global_init must run once per process before any other curl call, and is not
/// thread-safe. Swift runs a global's initialiser exactly once, under a lock, on first use.
enum CurlGlobal {
    static let initialized: CURLcode = curl_global_init(Int(CURL_GLOBAL_DEFAULT))
}
