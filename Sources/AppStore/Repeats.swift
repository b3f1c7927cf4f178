/// A record Apple may list more than once (a transaction in both `latest_receipt_info` and
/// `in_app`, a subscription's renewal info twice), each repeat with some fields the others lack:
/// the repeats are merged into the first, which keeps its own values and takes the missing ones.
protocol MergedFromRepeats {
    /// What makes two entries repeats of one; nil: an entry with none is kept as it is.
    var repeatKey: String? { get }
    /// The fields a repeat fills in where the first has none.
    static var fillable: [Fillable<Self>] { get }
}

/// One optional field of `Root` that a repeat may fill in.
struct Fillable<Root>: Sendable {
    let fill: @Sendable (inout Root, Root) -> Void

    init<Value>(_ field: WritableKeyPath<Root, Value?> & Sendable) {
        fill = { merged, other in
            if merged[keyPath: field] == nil { merged[keyPath: field] = other[keyPath: field] }
        }
    }
}

extension MergedFromRepeats {
    /// This entry with its missing fields taken from `other`, a repeat of it.
    func filling(from other: Self) -> Self {
        var merged = self
        for field in Self.fillable { field.fill(&merged, other) }
        return merged
    }

    /// `entries` with repeats merged into their first occurrence (earlier entries win where both
    /// have a value), in first-seen order.
    static func deduplicated(_ entries: [Self]) -> [Self] {
        var merged: [Self] = []
        var position: [String: Int] = [:]
        for entry in entries {
            if let key = entry.repeatKey, let index = position[key] {
                merged[index] = merged[index].filling(from: entry)
            } else {
                if let key = entry.repeatKey { position[key] = merged.count }
                merged.append(entry)
            }
        }
        return merged
    }
}
