/// A scheduler pass's run id: its night (the UTC date, or the run an operator named) and its
/// number in the night, `2026-11-28/2`. Its jobs carry it (`Job.runID`) and its tally is named by
/// it (`QueueKeys.run`), so every pass counts its own jobs; the night groups them.
public enum SchedulerPassID {
    /// The longest night: room is left for "/" and a pass number within a run id's 64 bytes.
    public static let longestNight = 54

    public static func make(night: String, pass: Int) -> String { "\(night)/\(pass)" }

    /// Whether `runID` is `name` itself or a pass of the night `name`: asking for a night's dead
    /// letters finds those of all its passes.
    public static func runID(_ runID: String, isIn name: String) -> Bool {
        runID == name || runID.hasPrefix(name + "/")
    }

    /// Whether pass ids can be made of `night`: 1 to `longestNight` bytes without '|' or '/'.
    public static func isValid(night: String) -> Bool {
        !night.isEmpty && night.utf8.count <= longestNight && !night.contains("|") && !night.contains("/")
    }

    /// Refuses a night no pass id can be made of.
    public static func validate(night: String) throws(QueueError) {
        guard isValid(night: night) else {
            throw .invalidArgument("a night (run id) must be 1 to \(longestNight) bytes without '|' or '/', e.g. \"2025-06-01\"")
        }
    }
}
