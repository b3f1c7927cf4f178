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
}
