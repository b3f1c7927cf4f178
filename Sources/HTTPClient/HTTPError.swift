import CCurl

/// A request that got no complete answer. It names the host but never the URL's path or query,
/// the headers or the body: callers put secrets there.
public struct HTTPError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// The connect timeout or the total timeout passed.
        case timeout
        /// Nothing accepted the connection: no server on the port, or the host was unreachable.
        case connectionRefused
        /// The server closed or reset the connection before it answered completely.
        case connectionReset
        /// The host name could not be resolved.
        case dns
        /// The TLS handshake broke off before the server's certificate was judged (curl 35): a reset
        /// or an answer that is not TLS. Usually passing; when every request fails so, the URL's
        /// scheme does not match the server (https to a plain HTTP port).
        case tlsHandshake
        /// The server's answer broke HTTP: a weird reply (curl 8) or an HTTP/2 framing or stream
        /// error (16, 92). Usually a passing fault of the server or a proxy in between.
        case protocolError
        /// The server's certificate did not verify, or this machine's TLS setup cannot be used (the
        /// CA file, a client certificate, the ciphers): retrying will not help.
        case tls
        /// The host resolved only to addresses the client may not reach (see
        /// `HTTPClientConfiguration.publicAddressesOnly`); nothing was sent.
        case refusedAddress
        /// Anything else, such as a malformed URL or an unsupported scheme.
        case other
    }

    public let kind: Kind
    /// libcurl's error code (`CURLcode`), for looking up the exact cause.
    public let curlCode: Int
    /// libcurl's own explanation, such as "Failed to connect to 10.0.0.1 port 443 after 3 ms:
    /// Couldn't connect to server". It names hosts and files, never URLs, headers or bodies.
    public let message: String
    /// The host the request was for, or nil when the URL could not be parsed.
    public let host: String?

    /// Whether the same request may succeed if tried again later. Timeouts, refused and reset
    /// connections, DNS failures, broken TLS handshakes and garbled HTTP pass; certificates that
    /// do not verify and malformed requests need a fix first. A reset request may already have
    /// been processed: retry only requests safe to repeat.
    public var isRetryable: Bool {
        switch kind {
        case .timeout, .connectionRefused, .connectionReset, .dns, .tlsHandshake, .protocolError: true
        case .tls, .refusedAddress, .other: false
        }
    }

    public var description: String {
        "HTTP request\(host.map { " to \($0)" } ?? "") failed (\(kind), curl error \(curlCode)): "
            + "\(message). \(advice)"
    }

    private var advice: String {
        switch kind {
        case .timeout:
            "Retry later; if the server is known to be slow, raise the client's timeouts."
        case .connectionRefused:
            "Check that the server is running and the host and port are right, then retry."
        case .connectionReset:
            "Retry; the server may have processed the request, so repeat only requests that are safe to repeat."
        case .dns:
            "Check the host name and the machine's DNS resolver, then retry."
        case .tlsHandshake:
            "Retry; if every request fails so, check that the URL's scheme matches the server (https needs a TLS server)."
        case .protocolError:
            "Retry; if every request fails so, check that the URL names an HTTP server, and any proxy on the way."
        case .tls where curlCode == Int(CURLE_SSL_CACERT_BADFILE.rawValue):
            "Check that the configured CA file exists and holds PEM certificates; retrying will not help."
        case .tls:
            "Check the server's certificate, the configured CA file and this machine's clock; retrying will not help."
        case .refusedAddress:
            "Only public internet addresses may be reached; retrying will not help unless the host's DNS changes."
        case .other:
            "Check the URL and the request; retrying will not help."
        }
    }
}

extension HTTPError {
    /// An error for a failed curl call on a request to `url`, explained by `detail` (curl's
    /// error buffer) or, when that is empty, by curl's generic text for the code.
    init(_ code: CURLcode, detail: String, url: String) {
        kind = Kind(code)
        curlCode = Int(code.rawValue)
        message = detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail
        host = Self.host(of: url)
    }

    /// A request refused before connecting, because every address its host resolved to is not public.
    init(refused addresses: [String], url: String) {
        kind = .refusedAddress
        curlCode = Int(CURLE_COULDNT_CONNECT.rawValue)
        message = "refused to connect to \(addresses.joined(separator: ", ")): not a public internet address"
        host = Self.host(of: url)
    }

    /// The host part of `url`, parsed by curl itself so it matches what curl connected to.
    private static func host(of url: String) -> String? {
        guard let parsed = curl_url() else { return nil }
        defer { curl_url_cleanup(parsed) }
        var host: UnsafeMutablePointer<CChar>?
        guard curl_url_set(parsed, CURLUPART_URL, url, 0) == CURLUE_OK,
              curl_url_get(parsed, CURLUPART_HOST, &host, 0) == CURLUE_OK,
              let host
        else { return nil }
        defer { curl_free(host) }
        return String(cString: host)
    }
}

extension HTTPError.Kind {
    /// curl's TLS errors split in two. 35 (the handshake broke off) says nothing about who the
    /// server is: curl reports a certificate that did not verify as 60, never as 35. Every other
    /// TLS code is a verdict on the certificate (60; 83 issuer, 90 pinned key, 91 OCSP status) or on
    /// this machine's setup (58 and 98 client certificate, 59 ciphers, 77 CA file, 82 CRL file, 53,
    /// 54 and 66 engine, 64 TLS required, 80 shutdown, which HTTP never does). 51, once the peer
    /// certificate's error, has been 60 since curl 7.62.
    init(_ code: CURLcode) {
        switch code {
        case CURLE_OPERATION_TIMEDOUT:
            self = .timeout
        case CURLE_COULDNT_CONNECT:
            self = .connectionRefused
        case CURLE_GOT_NOTHING, CURLE_SEND_ERROR, CURLE_RECV_ERROR, CURLE_PARTIAL_FILE:
            self = .connectionReset
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY:
            self = .dns
        case CURLE_SSL_CONNECT_ERROR:
            self = .tlsHandshake
        case CURLE_WEIRD_SERVER_REPLY, CURLE_HTTP2, CURLE_HTTP2_STREAM:
            self = .protocolError
        case CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM,
             CURLE_SSL_CIPHER, CURLE_SSL_CACERT_BADFILE, CURLE_SSL_CRL_BADFILE,
             CURLE_SSL_ISSUER_ERROR, CURLE_SSL_PINNEDPUBKEYNOTMATCH, CURLE_SSL_INVALIDCERTSTATUS,
             CURLE_SSL_ENGINE_NOTFOUND, CURLE_SSL_ENGINE_SETFAILED, CURLE_SSL_ENGINE_INITFAILED,
             CURLE_SSL_SHUTDOWN_FAILED, CURLE_SSL_CLIENTCERT, CURLE_USE_SSL_FAILED:
            self = .tls
        default:
            self = .other
        }
    }
}
