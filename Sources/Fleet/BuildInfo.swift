/// What this binary is: `receiptfleet --version`, and the `receiptfleet_build_info` metric.
public enum BuildInfo {
    public static let version = "0.1.0"

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
