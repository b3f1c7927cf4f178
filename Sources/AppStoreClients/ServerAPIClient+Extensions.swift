import AppStore
import Foundation
import HTTPClient

/// What an extension asks of Apple: how many days, why, and the identifier that makes asking
/// again safe (Apple applies one request once, however often it hears it).
public struct ExtensionAsk: Sendable, Equatable {
    public var days: Int
    public var reason: ExtendReason
    /// A UUID, one per request; a retry of the request sends the same.
    public var requestIdentifier: String

    public init(days: Int, reason: ExtendReason, requestIdentifier: String) {
        (self.days, self.reason, self.requestIdentifier) = (days, reason, requestIdentifier)
    }

    /// The request body: `ExtendRenewalDateRequest`, or with a product `MassExtendRenewalDateRequest`.
    func body(productID: String? = nil) -> [UInt8] {
        var json = Array("{\"extendByDays\":\(days),\"extendReasonCode\":\(reason.rawValue),\"requestIdentifier\":".utf8)
        JSONText.appendString(requestIdentifier, to: &json)
        if let productID {
            json += Array(",\"productId\":".utf8)
            JSONText.appendString(productID, to: &json)
        }
        return json + [UInt8(ascii: "}")]
    }
}

extension ServerAPIClient {
    /// Extend a Subscription Renewal Date: moves the current period's end of the subscription of
    /// `originalTransactionID` by `ask.days` (`PUT /inApps/v1/subscriptions/extend/{id}`).
    public func extendRenewalDate(
        originalTransactionID: String, _ ask: ExtensionAsk, in environment: AppStoreEnvironment
    ) throws(ServerAPICallError) -> ExtendedRenewal {
        let answer = try call("/inApps/v1/subscriptions/extend/" + Self.pathSegment(originalTransactionID), .put(ask.body()), in: environment)
        do {
            return try ExtendedRenewal(body: answer.body, httpStatus: answer.status)
        } catch {
            throw ServerAPICallError(description: "Apple's answer to the extension could not be read: \(error)", retryAfter: nil)
        }
    }

    /// Extend Subscription Renewal Dates for All Active Subscribers of `productID`
    /// (`POST /inApps/v1/subscriptions/extend/mass`): Apple takes the request and works through
    /// the subscribers on its own time; `renewalExtensionStatus` says when it is done.
    public func extendRenewalDates(productID: String, _ ask: ExtensionAsk, in environment: AppStoreEnvironment) throws(ServerAPICallError) {
        _ = try call("/inApps/v1/subscriptions/extend/mass", .post(ask.body(productID: productID)), in: environment)
    }

    /// Get Status of Subscription Renewal Date Extensions
    /// (`GET /inApps/v1/subscriptions/extend/mass/{productId}/{requestIdentifier}`).
    public func renewalExtensionStatus(
        productID: String, requestIdentifier: String, in environment: AppStoreEnvironment
    ) throws(ServerAPICallError) -> MassExtensionStatus {
        let path = "/inApps/v1/subscriptions/extend/mass/" + Self.pathSegment(productID) + "/" + Self.pathSegment(requestIdentifier)
        let answer = try call(path, .get, in: environment)
        do {
            return try MassExtensionStatus(body: answer.body, httpStatus: answer.status)
        } catch {
            throw ServerAPICallError(description: "Apple's extension status could not be read: \(error)", retryAfter: nil)
        }
    }

    /// `text` as one segment of a URL's path: it cannot reach another path or add a query. ASCII
    /// letters, digits, `-`, `_` and `.` (a product id's) stay as they are, but a segment of dots
    /// alone (`.`, `..`) is encoded whole: the client would resolve it into the parent path.
    static func pathSegment(_ text: String) -> String {
        guard !text.isEmpty, text.allSatisfy({ $0 == "." }) else {
            return text.addingPercentEncoding(withAllowedCharacters: pathSegmentCharacters) ?? ""
        }
        return String(repeating: "%2E", count: text.count)
    }

    private static let pathSegmentCharacters = CharacterSet(
        charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")
}
