/// A value that can be one argument of a Redis command. Arguments are sent with explicit lengths,
/// so any bytes are safe, NUL and invalid UTF-8 included.
///
/// String, Substring, `[UInt8]`, Int, Int64, Int32, UInt64 and Double conform; integers and doubles
/// go in their decimal text form, which is what Redis parses.
public protocol RedisArgument {
    /// Appends the bytes Redis should receive for this argument.
    func appendRedisBytes(to buffer: inout [UInt8])
}

extension String: RedisArgument {
    public func appendRedisBytes(to buffer: inout [UInt8]) { buffer.append(contentsOf: utf8) }
}

extension Substring: RedisArgument {
    public func appendRedisBytes(to buffer: inout [UInt8]) { buffer.append(contentsOf: utf8) }
}

extension Array: RedisArgument where Element == UInt8 {
    public func appendRedisBytes(to buffer: inout [UInt8]) { buffer.append(contentsOf: self) }
}

extension Int: RedisArgument {
    public func appendRedisBytes(to buffer: inout [UInt8]) { description.appendRedisBytes(to: &buffer) }
}

extension Int64: RedisArgument {
    public func appendRedisBytes(to buffer: inout [UInt8]) { description.appendRedisBytes(to: &buffer) }
}

extension Int32: RedisArgument {
    public func appendRedisBytes(to buffer: inout [UInt8]) { description.appendRedisBytes(to: &buffer) }
}

extension UInt64: RedisArgument {
    public func appendRedisBytes(to buffer: inout [UInt8]) { description.appendRedisBytes(to: &buffer) }
}

extension Double: RedisArgument {
    /// Swift prints infinities as "inf" and "-inf", as Redis expects for scores.
    public func appendRedisBytes(to buffer: inout [UInt8]) { description.appendRedisBytes(to: &buffer) }
}

/// One command's arguments laid out for hiredis's argv/argvlen calls: all bytes in one buffer,
/// plus each argument's length.
struct EncodedCommand {
    private var bytes: [UInt8] = []
    private var lengths: [Int] = []

    init(_ arguments: [any RedisArgument]) {
        precondition(!arguments.isEmpty, "a Redis command needs at least its name")
        for argument in arguments {
            let start = bytes.count
            argument.appendRedisBytes(to: &bytes)
            lengths.append(bytes.count - start)
        }
        // A final byte that belongs to no argument keeps the buffer non-empty, so every argument
        // (even an empty one at the end) has a valid address.
        bytes.append(0)
    }

    /// Calls `body` with argc, argv and argvlen, valid only during the call (hiredis copies them).
    func withArgv<T>(
        _ body: (Int32, UnsafeMutablePointer<UnsafePointer<CChar>?>, UnsafePointer<Int>) -> T
    ) -> T {
        bytes.withUnsafeBufferPointer { buffer in
            let base = UnsafeRawPointer(buffer.baseAddress!).assumingMemoryBound(to: CChar.self)
            var argv: [UnsafePointer<CChar>?] = []
            var offset = 0
            for length in lengths {
                argv.append(base + offset)
                offset += length
            }
            return argv.withUnsafeMutableBufferPointer { argv in
                lengths.withUnsafeBufferPointer { lengths in
                    body(Int32(lengths.count), argv.baseAddress!, lengths.baseAddress!)
                }
            }
        }
    }
}
