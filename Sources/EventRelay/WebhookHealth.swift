import Foundation
import PostgresClient

/// How deliveries to one endpoint have gone lately, for the ops console.
public struct WebhookHealth: Sendable {
    public var endpoint: WebhookEndpoint
    /// Deliveries that succeeded, and that failed for good, since the window's start.
    public var delivered: Int
    public var failed: Int
    /// Deliveries waiting for their next attempt now.
    public var pending: Int
    public var lastDeliveredAt: Date?
    /// The latest failed attempts, newest first.
    public var recentFailures: [WebhookFailure]
}

/// One attempt the receiver did not accept: its HTTP status, or the error that kept it from answering.
public struct WebhookFailure: Sendable {
    public var attemptedAt: Date
    public var status: Int?
    public var error: String?
}

extension WebhookRegistry {
    /// Every endpoint with its deliveries since `since` and up to `failures` of its latest failed
    /// attempts (looked for among the newest attempts of all endpoints, so a long-healthy endpoint
    /// shows none).
    public func health(since: Date, failures: Int = 5) throws -> [WebhookHealth] {
        let counts = try database.query("""
            SELECT endpoint_id,
                count(*) FILTER (WHERE state = 'delivered' AND delivered_at >= $1) AS delivered,
                count(*) FILTER (WHERE state = 'failed' AND created_at >= $1) AS failed,
                count(*) FILTER (WHERE state = 'pending') AS pending,
                max(delivered_at) AS last_delivered_at
            FROM webhook_deliveries GROUP BY endpoint_id
            """, [.timestamptz(since)])
        var byEndpoint: [Int64: PostgresRow] = [:]
        for row in counts { byEndpoint[try row["endpoint_id"].int64() ?? 0] = row }
        var failuresByEndpoint: [Int64: [WebhookFailure]] = [:]
        for row in try database.query("""
            SELECT d.endpoint_id, a.attempted_at, a.response_status, a.error
            FROM (SELECT * FROM webhook_attempts ORDER BY id DESC LIMIT 1000) AS a
            JOIN webhook_deliveries d ON d.id = a.delivery_id
            WHERE a.response_status IS NULL OR a.response_status NOT BETWEEN 200 AND 299
            ORDER BY a.id DESC
            """) {
            let id = try row["endpoint_id"].int64() ?? 0
            guard failuresByEndpoint[id, default: []].count < failures else { continue }
            failuresByEndpoint[id, default: []].append(WebhookFailure(
                attemptedAt: try row["attempted_at"].timestamptz() ?? Date(timeIntervalSince1970: 0),
                status: try row["response_status"].int64().map(Int.init), error: try row["error"].text()))
        }
        return try list().map { endpoint in
            let row = byEndpoint[endpoint.id]
            return WebhookHealth(
                endpoint: endpoint,
                delivered: Int(try row?["delivered"].int64() ?? 0), failed: Int(try row?["failed"].int64() ?? 0),
                pending: Int(try row?["pending"].int64() ?? 0), lastDeliveredAt: try row?["last_delivered_at"].timestamptz(),
                recentFailures: failuresByEndpoint[endpoint.id] ?? [])
        }
    }
}
