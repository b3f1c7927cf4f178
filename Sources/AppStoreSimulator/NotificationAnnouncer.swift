import ServiceLifecycle

/// Sends the simulator's V2 notifications as its clock passes their events, and Apple's retries of
/// failed ones as they fall due, as Apple does without being asked: every `interval` of real time
/// until graceful shutdown. (A clock move through `POST /control/clock` sends at once as well.)
public struct NotificationAnnouncer: Service {
    let simulator: SimulatedAppStore
    let interval: Duration

    public init(_ simulator: SimulatedAppStore, every interval: Duration = .milliseconds(250)) {
        self.simulator = simulator
        self.interval = interval
    }

    public func run() async {
        await cancelWhenGracefulShutdown {
            while (try? await Task.sleep(for: interval)) != nil {
                await simulator.sendDueNotifications()
            }
        }
    }
}
