/// What the layout shows around every page: its title, which tab is current, and who is logged in,
/// with the session's CSRF token every form carries and the banners of what stops the fleet. The
/// login and error pages have no operator. Templates read it as `chrome.…`.
struct Chrome {
    enum Tab { case overview, queues, dead, subscriptions, workers, timings, webhooks, audit }

    let title: String
    let onOverview: Bool, onQueues: Bool, onDead: Bool, onSubscriptions: Bool, onWorkers: Bool, onTimings: Bool, onWebhooks: Bool
    let onAudit: Bool
    let operatorName: String?
    let csrf: String
    let banners: [Banner]

    init(_ title: String, tab: Tab? = nil, viewer: OpsConsole.Operator? = nil) {
        self.title = title
        (onOverview, onQueues, onDead, onSubscriptions) = (tab == .overview, tab == .queues, tab == .dead, tab == .subscriptions)
        (onWorkers, onTimings, onWebhooks, onAudit) = (tab == .workers, tab == .timings, tab == .webhooks, tab == .audit)
        (operatorName, csrf, banners) = (viewer?.name, viewer?.csrf ?? "", viewer?.banners ?? [])
    }
}
