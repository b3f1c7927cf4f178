import Terminal
import Testing

/// A line said while a progress line is being redrawn on a terminal replaces it instead of
/// running on from its end ("…27 events unpublisheddemo: the simulator's knobs change").
@Suite struct ProgressLineTests {
    @Test func aWholeLineClearsTheProgressLineOnATerminalOnly() {
        let progress = "demo: night 1: 812 of 1000 verified"
        let said = ProgressLine.wholeLine("demo: the simulator's knobs change", onTerminal: true)
        #expect(said == "\r\u{1B}[2Kdemo: the simulator's knobs change\n")
        // What the terminal shows: the progress line, then the said line over it from its first column.
        let shown = (progress + said).components(separatedBy: "\r").last?.replacingOccurrences(of: "\u{1B}[2K", with: "")
        #expect(shown == "demo: the simulator's knobs change\n")
        #expect(ProgressLine.wholeLine("demo: done", onTerminal: false) == "demo: done\n", "a log file gets plain lines")
    }
}
