import AppStore
import Foundation
import Hummingbird
import JobQueue

/// The queues (Sidekiq Web's Queues page): each ready stream's depth and latency, the jobs workers
/// hold, those waiting for a time, the dead letters; and the queued jobs by app, backend and priority.
extension OpsConsole {
    func queues(_ request: Request) async throws -> Response {
        let viewer = try await viewer(request)
        let (depths, places) = try await lanes.run { desk in
            let depths = try desk.queue.depths()
            return (depths, try desk.ledger.appsAndBackends(of: depths.sample.entries.map(\.job.subscriptionID)))
        }
        return page("queues", QueuesView(viewer: viewer, depths: depths, places: places, defaultBackend: fleet.defaultBackend))
    }
}

struct QueuesView {
    let chrome: Chrome
    var queues: [Queue]
    var oldestJob: String
    var breakdown: [Group]
    var breakdownScope: String

    /// One queue: what waits in it, what workers hold from it, and how old its oldest is.
    struct Queue {
        /// `queue-high`, `queue-normal`, `queue-waiting` or `queue-dead`: the row's id.
        var id: String
        var name: String
        /// What the queue holds, in a few words.
        var what: String
        /// The page that lists its jobs, where there is one.
        var link: String?
        var jobs: String
        var inFlight: String
        var oldest: String
    }

    /// The sampled jobs of one app, backend and priority.
    struct Group {
        var app: String
        /// The subscriptions' backend, the deployment's default spelled out.
        var backend: String
        var priority: String
        var ready: String
        var inFlight: String
        var waiting: String
        var oldest: String
    }

    init(viewer: OpsConsole.Operator, depths: QueueDepths, places: [Int64: (app: String, backend: VerificationBackend?)],
         defaultBackend: VerificationBackend) {
        chrome = Chrome("Queues", tab: .queues, viewer: viewer)
        func age(_ duration: Duration?) -> String { duration.map { Shown.duration($0.seconds) } ?? "–" }
        queues = depths.ready.map { queue in
            Queue(id: "queue-\(queue.priority.rawValue)", name: "\(queue.priority.rawValue.capitalized) priority",
                  what: queue.priority == .high ? "notifications, registrations, manual checks" : "nightly sweeps, renewal checks, replays",
                  link: nil, jobs: Shown.count(queue.ready), inFlight: Shown.count(queue.inFlight),
                  oldest: queue.latency.map { "waited \(age($0))" } ?? "none ready")
        }
        let waitingOldest = depths.waitingOverdue.map { "due for \(age($0))" } ?? depths.nextDueIn.map { "next due in \(age($0))" } ?? "none waits"
        queues.append(Queue(
            id: "queue-waiting", name: "Waiting for a time", what: "retries, jobs a pause postponed, checks scheduled for later",
            link: "/console/workers#delayed-h", jobs: "\(Shown.count(depths.waiting)) (\(Shown.count(depths.waitingDue)) due)", inFlight: "–",
            oldest: waitingOldest))
        queues.append(Queue(
            id: "queue-dead", name: "Dead letters", what: "jobs that will not be retried", link: "/console/dead", jobs: Shown.count(depths.dead),
            inFlight: "–", oldest: depths.oldestDeadAge.map { "buried \(age($0)) ago" } ?? "none"))
        oldestJob = depths.oldestJobAge.map {
            "The oldest job in the queue (ready, in flight or waiting) was first enqueued \(age($0)) ago; retries and pauses do not restart it."
        } ?? "The queue holds no job that is due."

        var groups: [GroupKey: (ready: Int, inFlight: Int, waiting: Int, firstEnqueued: Int64)] = [:]
        for entry in depths.sample.entries {
            let place = places[entry.job.subscriptionID]
            let key = GroupKey(app: place?.app ?? "not in the ledger", backend: place.map { ($0.backend ?? defaultBackend).description } ?? "–",
                               priority: JobPriority(entry.job.reason))
            var group = groups[key] ?? (0, 0, 0, entry.job.enqueuedAt)
            switch entry.place {
            case .ready: group.ready += 1
            case .inFlight: group.inFlight += 1
            case .waiting: group.waiting += 1
            }
            group.firstEnqueued = min(group.firstEnqueued, entry.job.enqueuedAt)
            groups[key] = group
        }
        breakdown = groups.sorted { $0.key < $1.key }.map { key, group in
            Group(app: key.app, backend: key.backend, priority: key.priority.rawValue, ready: Shown.count(group.ready),
                  inFlight: Shown.count(group.inFlight), waiting: Shown.count(group.waiting),
                  oldest: "\(age(.milliseconds(max(0, depths.now - group.firstEnqueued)))) ago")
        }
        let total = depths.ready.reduce(0) { $0 + $1.ready + $1.inFlight } + depths.waiting
        let limit = Shown.count(depths.sample.limit)
        breakdownScope = depths.sample.complete
            ? "Every job in the queue (\(Shown.count(total))), by its subscription's app and backend and its priority; oldest by first enqueue."
            : "Counted over the first \(limit) jobs of each queue (the next \(limit) ready of each priority, the first \(limit) workers hold from each, "
              + "the \(limit) soonest due): \(Shown.count(depths.sample.entries.count)) of the \(Shown.count(total)) jobs queued, so the rest are not "
              + "broken down. A job names only its subscription, whose app and backend are the ledger's: a full count would read every job."
    }

    private struct GroupKey: Hashable, Comparable {
        var app: String
        var backend: String
        var priority: JobPriority

        static func < (left: Self, right: Self) -> Bool {
            (left.app, left.backend, left.priority == .high ? 0 : 1) < (right.app, right.backend, right.priority == .high ? 0 : 1)
        }
    }
}
