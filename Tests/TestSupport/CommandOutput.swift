/// The two figures a command's summary line holds after `prefix`: "Brought in 12 of 14
/// notifications" after "Brought in " is (12, 14); nil when no line starts so.
public func summaryFigures(in output: String, after prefix: String) -> (new: Int, of: Int)? {
    guard let line = output.split(separator: "\n").first(where: { $0.hasPrefix(prefix) }) else { return nil }
    let words = line.dropFirst(prefix.count).split(separator: " ")
    guard words.count >= 3, let new = Int(words[0]), let of = Int(words[2]) else { return nil }
    return (new, of)
}
