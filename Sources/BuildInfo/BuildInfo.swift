/// What this binary is: `receiptfleet --version`, and the `receiptfleet_build_info` metric.
public enum BuildInfo {
    public static let version = "0.1.0"

    /// The git commit it was built from (12 hex digits; "unknown" when built outside a git
    /// checkout), stamped by the BuildStamp plugin.
    public static var commit: String { stampedCommit }

    /// The day it was built, UTC (YYYY-MM-DD): the day of the first build after HEAD last moved.
    public static var buildDate: String { stampedDate }

    /// `--version`: "0.1.0 (commit 1a2b3c4d5e6f, built 2026-11-25, Swift 6.3)".
    public static var description: String { "\(version) (commit \(commit), built \(buildDate), Swift \(swift))" }

    /// The compiler that built it, to its minor version.
    public static let swift: String = {
        #if compiler(>=6.5)
        "6.5+"
        #elseif compiler(>=6.4)
        "6.4"
        #elseif compiler(>=6.3)
        "6.3"
        #elseif compiler(>=6.2)
        "6.2"
        #elseif compiler(>=6.1)
        "6.1"
        #else
        "6.0"
        #endif
    }()
}
