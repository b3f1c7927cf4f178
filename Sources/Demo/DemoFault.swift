import AppStore
import ArgumentParser

/// One thing going wrong in the middle of the demo's second night, for fault drills
/// (`scripts/faults`). Each is a few steps at set times after the night is a third done.
enum DemoFault: String, CaseIterable, ExpressibleByArgument {
    /// A worker process SIGKILLed three times (a different one each time), each restarted at once.
    case killWorker = "kill-worker"
    /// Redis stopped and started again (`--restart-command`); with appendonly it keeps its data.
    case restartRedis = "restart-redis"
    /// Redis restarted without its data (no append-only log, or a failover to an empty replica);
    /// then an operator runs `schedule`, as docs/operations.md says to.
    case restartRedisWithoutAOF = "restart-redis-without-aof"
    case restartPostgres = "restart-postgres"
    /// The server's processes stopped (SIGSTOP) for `freezeDuration`, then continued: its kernel
    /// still acknowledges every packet, so only the clients' call deadlines notice.
    case freezeRedis = "freeze-redis"
    case freezePostgres = "freeze-postgres"
    /// Apple answers 21005 to everything for `--fault-seconds`.
    case outage
    /// 5% of Apple's answers are garbage from then on: HTML 502 pages, truncated JSON, wrong types.
    case garbage
    /// From then on 3% of Apple's connections close without an answer and 3% stop halfway with a
    /// TCP reset: retried, never a halt.
    case brokenConnections = "broken-connections"
    /// The account's shared secret changes under the fleet for `--fault-seconds` (21004: the app
    /// that uses it halts, while the journal, with a secret of its own, goes on); then it is put
    /// right and an operator resumes the fleet.
    case wrongSecret = "wrong-secret"
    /// PostgreSQL's data is lost: `pg_dump` when the fault strikes, the fleet stopped `--fault-seconds`
    /// later and the database dropped, a fresh one restored from the dump, the fleet started again
    /// pointed at it, and `schedule` run again (docs/operations.md, "Backing up and restoring").
    case backupRestore = "backup-restore"
    /// After night 2 and its check: `serve` down (SIGTERM) while Apple sends two days of V2
    /// notifications, back after `--fault-seconds`; then `notifications recover --only-failures`
    /// brings in what it missed, each once (the Server API only: the history is read through it).
    case notificationOutage = "notification-outage"

    /// Twice the default call deadline (10 s), so that calls time out rather than merely wait.
    static let freezeDuration: Duration = .seconds(20)

    /// What the fault needs from the command line, or nil when it has it.
    func problem(restartCommand: String?, serverPIDFile: String?, backend: String) -> String? {
        switch self {
        case .restartRedis, .restartRedisWithoutAOF, .restartPostgres:
            restartCommand != nil ? nil
                : "--fault \(rawValue) needs --restart-command, the shell command that restarts the server "
                    + "(scripts/faults passes `scripts/services restart …`, with --lose-data for \(Self.restartRedisWithoutAOF.rawValue))"
        case .freezeRedis, .freezePostgres:
            serverPIDFile != nil ? nil
                : "--fault \(rawValue) needs --server-pid-file, the file holding the server's process id "
                    + "(scripts/faults passes the one scripts/services wrote)"
        case .notificationOutage:
            VerificationBackend(argument: backend) == .serverAPI ? nil
                : "--fault notification-outage needs --backend server-api: missed notifications are recovered through it"
        case .killWorker, .outage, .garbage, .brokenConnections, .wrongSecret, .backupRestore: nil
        }
    }

    /// The steps: when (after the fault starts) and what.
    func steps(seconds: Double) -> [(after: Duration, step: Step)] {
        switch self {
        case .killWorker: [(.zero, .killWorker(0)), (.seconds(3), .killWorker(1)), (.seconds(6), .killWorker(2))]
        case .restartRedis, .restartPostgres: [(.zero, .restartServer)]
        case .restartRedisWithoutAOF: [(.zero, .restartServer), (.seconds(5), .schedule)]
        case .freezeRedis, .freezePostgres: [(.zero, .freezeServer(Self.freezeDuration))]
        case .outage: [(.zero, .outage(seconds: seconds))]
        case .garbage: [(.zero, .knobs(#"{"garbage_rate": 0.05}"#))]
        case .brokenConnections: [(.zero, .knobs(#"{"drop_rate": 0.03, "reset_rate": 0.03}"#))]
        case .wrongSecret:
            [(.zero, .knobs(#"{"shared_secret": "rotated-by-mistake"}"#)),
             (.seconds(seconds), .knobs(#"{"shared_secret": "\#(DemoStage.sharedSecret)"}"#)),
             (.seconds(seconds), .resumeFleet)]
        case .backupRestore: [(.zero, .backUp), (.seconds(seconds), .restore), (.seconds(seconds), .schedule)]
        case .notificationOutage: []  // it strikes after the night (DemoStage.missNotifications)
        }
    }

    enum Step {
        /// SIGKILL the n-th worker process (modulo their number) and start it again.
        case killWorker(Int)
        case restartServer
        /// SIGSTOP the server and its child processes, wait, SIGCONT them.
        case freezeServer(Duration)
        case outage(seconds: Double)
        /// A JSON body for the simulator's /control/knobs.
        case knobs(String)
        /// `receiptfleet resume`.
        case resumeFleet
        /// `receiptfleet schedule` for the night in hand.
        case schedule
        /// `pg_dump` of the fleet's database, as a nightly backup takes it.
        case backUp
        /// The fleet stopped, its database lost, a new one restored from the backup, the fleet
        /// started again against it.
        case restore
    }
}
