import Foundation

/// One line of progress on a terminal, redrawn in place; plain lines when output is not a terminal.
public final class ProgressLine {
    private let interactive = isatty(STDERR_FILENO) == 1
    private var lastShown = ContinuousClock.now - .seconds(1)

    public init() {}

    public func show(_ text: String) {
        guard interactive else {
            if lastShown.duration(to: .now) >= .seconds(2) {
                lastShown = .now
                FileHandle.standardError.write(Data((text + "\n").utf8))
            }
            return
        }
        FileHandle.standardError.write(Data(("\r\u{1B}[2K" + text).utf8))
    }

    public func finish() {
        if interactive { FileHandle.standardError.write(Data("\n".utf8)) }
    }

    /// `text` as a whole line for standard error: on a terminal it first clears the line, so that
    /// it replaces a progress line being redrawn there instead of running on from its end (the
    /// next `show` draws the progress again below it).
    public static func wholeLine(_ text: String, onTerminal: Bool = isatty(STDERR_FILENO) == 1) -> String {
        (onTerminal ? "\r\u{1B}[2K" : "") + text + "\n"
    }
}
