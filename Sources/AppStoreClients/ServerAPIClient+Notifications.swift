import AppStore
import Foundation
import HTTPClient

/// Why a call an operator's command makes (notifications, extensions) got no usable answer:
/// Apple's error (its code and message), a 429 (`retryAfter`), or no answer at all. Never holds
/// the token or a payload.
public struct ServerAPICallError: Error, CustomStringConvertible {
    public let description: String
    /// Seconds Apple asked to wait (a 429), when it said.
    public let retryAfter: Duration?
    /// Apple's `errorCode`, when its answer had one.
    public var code: Int? = nil
}

extension ServerAPIClient {
    /// One page of Get Notification History in `environment`: the V2 notifications Apple sent from
    /// `start` to `end`, oldest first (`onlyFailures`: only those never delivered); the next page
    /// with the last one's `paginationToken`.
    public func notificationHistory(
        in environment: AppStoreEnvironment, from start: Date, until end: Date, onlyFailures: Bool, after paginationToken: String?
    ) throws(ServerAPICallError) -> NotificationHistoryPage {
        var request = "{\"startDate\":\(Int64(start.timeIntervalSince1970 * 1000)),\"endDate\":\(Int64(end.timeIntervalSince1970 * 1000))"
        if onlyFailures { request += ",\"onlyFailures\":true" }
        request += "}"
        let query = paginationToken.map { "?paginationToken=" + ($0.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "") } ?? ""
        let answer = try call("/inApps/v1/notifications/history" + query, .post(Array(request.utf8)), in: environment)
        do {
            return try NotificationHistoryPage(body: answer.body, httpStatus: answer.status)
        } catch {
            throw ServerAPICallError(description: "Apple's notification history could not be read: \(error)", retryAfter: nil)
        }
    }

    /// Request a Test Notification: Apple sends a TEST notification to the app's server URL in
    /// `environment`; the token asks what came of it (`testNotificationStatus`).
    public func requestTestNotification(in environment: AppStoreEnvironment) throws(ServerAPICallError) -> String {
        let answer = try call("/inApps/v1/notifications/test", .post([]), in: environment)
        guard let token = (try? JSONValue.parse(answer.body))?.members?.text("testNotificationToken") else {
            throw ServerAPICallError(description: "Apple's answer named no testNotificationToken", retryAfter: nil)
        }
        return token
    }

    /// Get Test Notification Status: the test notification's signed payload and Apple's attempts to send it.
    public func testNotificationStatus(_ token: String, in environment: AppStoreEnvironment) throws(ServerAPICallError) -> NotificationHistoryPage.Item {
        let path = "/inApps/v1/notifications/test/" + (token.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(["-", "_"])) ?? "")
        let answer = try call(path, .get, in: environment)
        guard let fields = (try? JSONValue.parse(answer.body))?.members, let item = NotificationHistoryPage.Item(fields) else {
            throw ServerAPICallError(description: "Apple's test notification status could not be read", retryAfter: nil)
        }
        return item
    }

    /// A request an operator's command makes: its method, and the JSON body of a POST or a PUT.
    enum Method {
        case get
        case post([UInt8])
        case put([UInt8])
    }

    /// One call with the key's token: the answer when it is a success (200, or 202 for a request
    /// Apple takes to act on later), else why not.
    func call(_ path: String, _ method: Method, in environment: AppStoreEnvironment) throws(ServerAPICallError) -> HTTPResponse {
        let answer: HTTPResponse
        do {
            let url = endpoints.base(for: environment) + path
            let headers: HTTPHeaders = ["Authorization": "Bearer " + tokens.token()]
            switch method {
            case .get: answer = try http.get(url: url, headers: headers)
            case .post(let body): answer = try http.post(url: url, json: body, headers: headers)
            case .put(let body): answer = try http.put(url: url, json: body, headers: headers)
            }
        } catch {
            throw ServerAPICallError(description: "the App Store Server API did not answer: \(error)", retryAfter: nil)
        }
        guard (200...202).contains(answer.status) else {
            let (outcome, problem) = refusal(answer)
            let wait: Duration? = if case .serverAPI(.rateLimited(let retryAfter)) = outcome { retryAfter } else { nil }
            let error = ServerAPIErrorBody(body: answer.body)
            let message = error?.message.map { ": \($0)" } ?? ""
            throw ServerAPICallError(
                description: "the App Store Server API refused: \(problem)\(message)", retryAfter: wait, code: error?.code)
        }
        return answer
    }
}
