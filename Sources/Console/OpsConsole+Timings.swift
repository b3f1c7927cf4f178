import Foundation
import Hummingbird
import JobQueue

/// The Timings page: Apple's latency per endpoint and a job's time from first enqueue to done, fleet-wide.
extension OpsConsole {
    func timings(_ request: Request) async throws -> Response {
        let viewer = try await viewer(request)
        let window = request.uri.queryParameters["window"].flatMap { ChartWindow(rawValue: String($0)) } ?? .hour
        // By the processes' clock, which placed the timings in their minutes and hours.
        let now = Int64(clock.now().timeIntervalSince1970 * 1000)
        let span: FleetTimings.Span = window == .hour ? .minute : .hour
        let spans = try await lanes.run { desk in
            try desk.timings.read(span, last: Int(window.milliseconds / span.milliseconds), at: now)
        }
        return page("timings", TimingsView(spans: spans, span: span, window: window, now: now, viewer: viewer))
    }
}
