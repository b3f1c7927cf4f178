import CCurl
import Foundation

/// What a process does with the C libraries before anything else.
public enum CLibraries {
    /// Call first thing in `main`, before any connection is made.
    ///
    /// OpenSSL (which libcurl and libpq load) frees its global state in an exit handler, while a
    /// lane's thread that has just released its connections may still be freeing its own OpenSSL
    /// state: the two corrupt the heap (openssl/openssl#6214; a `notifications recover` aborted so,
    /// once in a benchmark's hundreds of runs). The handler is only registered by OpenSSL's first
    /// initialisation, so it is turned off here, before libpq's or curl's first call can make it;
    /// the process's memory goes back to the system at exit anyway. Then curl's global setup,
    /// which must not race with other threads either.
    public static func prepare() {
        skipOpenSSLCleanupAtExit()
        _ = CurlGlobal.initialized
    }

    /// `OPENSSL_init_crypto(OPENSSL_INIT_NO_ATEXIT, NULL)`, found at run time: libcrypto comes
    /// with libcurl and libpq, and the project links to neither it nor its headers.
    private static func skipOpenSSLCleanupAtExit() {
        guard let symbol = dlsym(nil, "OPENSSL_init_crypto") else { return }
        typealias InitCrypto = @convention(c) (UInt64, UnsafeRawPointer?) -> Int32
        _ = unsafeBitCast(symbol, to: InitCrypto.self)(noAtExit, nil)
    }

    /// OPENSSL_INIT_NO_ATEXIT (openssl/crypto.h, since OpenSSL 1.1.1).
    private static let noAtExit: UInt64 = 0x0008_0000
}
