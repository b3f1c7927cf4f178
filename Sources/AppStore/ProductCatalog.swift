/// The direction of a change between two products of one subscription group.
public enum PlanChangeKind: String, Sendable, Codable, CaseIterable {
    case upgrade
    case downgrade
    case crossgrade
}

/// What the fleet knows about the app's products: their service levels within their subscription
/// group, as set in App Store Connect, where level 1 is the highest service.
public struct ProductCatalog: Sendable, Equatable {
    public var levels: [String: Int]

    /// A catalog that knows no product: plan changes are reported without a known direction.
    public static let none = ProductCatalog(levels: [:])

    public init(levels: [String: Int]) { self.levels = levels }

    /// The direction of a change from one product to another by their levels; nil when either
    /// level is unknown.
    public func kind(from oldProduct: String, to newProduct: String) -> PlanChangeKind? {
        guard let old = levels[oldProduct], let new = levels[newProduct] else { return nil }
        return new < old ? .upgrade : new > old ? .downgrade : .crossgrade
    }
}
