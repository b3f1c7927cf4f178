import ArgumentParser
import Foundation
import PostgresClient

/// The `backup-restore` drill's steps: a backup as a nightly `pg_dump` takes it, then the loss of
/// the database and the runbook's restore (docs/operations.md, "Backing up and restoring").
extension DemoStage {
    var backupFile: URL { logDirectory.appendingPathComponent("receiptfleet.dump") }

    /// `pg_dump --format=custom` of the fleet's database while the night goes on.
    func backUp() throws {
        try? FileManager.default.removeItem(at: backupFile)
        let started = ContinuousClock.now
        let status = runProgram(["pg_dump", "--format=custom", "--file", backupFile.path, demoPostgres.unmaskedConnectionString])
        guard status == 0 else { throw ValidationError("pg_dump failed (wait status \(status)); its error is above.") }
        let seconds = started.duration(to: .now).seconds
        let bytes = (try? FileManager.default.attributesOfItem(atPath: backupFile.path)[.size] as? Int) ?? 0
        faultFigures["backup_seconds"] = String(format: "%.2f", seconds)
        faultFigures["backup_bytes"] = "\(bytes)"
        say("backed up the database with pg_dump: \(bytes) bytes in \(String(format: "%.1f", seconds)) s; the night goes on")
    }

    /// The database is lost: the fleet's processes stop, the database is dropped, a new one is
    /// restored from the backup, and the fleet starts again pointed at it. Redis keeps its queue.
    func restore() throws {
        let fleet = children.filter { $0.name.hasPrefix("worker-") }
        say("the database is lost: stopping the fleet (\(fleet.count) workers), dropping \(Self.database)")
        stop(fleet.map(\.process))
        children.removeAll { child in fleet.contains { $0.process === child.process } }
        let lostEvents = try PostgresConnection(configuration: demoPostgres).query("SELECT count(*) AS n FROM events")[0]["n"].int64() ?? 0
        let server = try PostgresConnection(configuration: serverPostgres)
        try drop(Self.database, on: server)

        let started = ContinuousClock.now
        _ = try server.query("CREATE DATABASE \(Self.restoredDatabase)")
        let restored = serverPostgres.database(Self.restoredDatabase)
        let status = runProgram([
            "pg_restore", "--exit-on-error", "--no-owner", "--dbname", restored.unmaskedConnectionString, backupFile.path,
        ])
        guard status == 0 else { throw ValidationError("pg_restore failed (wait status \(status)); its error is above.") }
        let seconds = started.duration(to: .now).seconds
        let restoredEvents = try PostgresConnection(configuration: restored).query("SELECT count(*) AS n FROM events")[0]["n"].int64() ?? 0
        faultFigures["restore_seconds"] = String(format: "%.2f", seconds)
        faultFigures["events_lost_with_the_database"] = "\(lostEvents - restoredEvents)"
        say("restored the backup into \(Self.restoredDatabase) in \(String(format: "%.1f", seconds)) s "
            + "(\(restoredEvents) of the \(lostEvents) events the lost database held); starting the fleet against it")

        demoPostgres = restored
        settings.postgresURL = restored.unmaskedConnectionString
        settings.relayPostgresURL = try settings.relayPostgresURL.map {
            try PostgresConfiguration($0).database(Self.restoredDatabase).unmaskedConnectionString
        }
        for child in fleet { try start(child.name, child.arguments, environment: child.environment) }
    }
}
