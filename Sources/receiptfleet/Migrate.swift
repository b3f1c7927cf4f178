import ArgumentParser
import EventRelay
import FleetConfiguration
import FleetFlags
import Ledger
import PostgresClient

/// `receiptfleet migrate`
struct Migrate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Bring the PostgreSQL schema up to this version of ReceiptFleet.",
        discussion: """
            Applies, in order and each in its own transaction, every migration the database lacks. Safe to \
            run from several processes at once and to run again. Refuses a database that a newer \
            ReceiptFleet has migrated. It reads postgres-url as every command does: --postgres-url, \
            RECEIPTFLEET_POSTGRES_URL, the --config file, or the default.

            Examples:
              receiptfleet migrate --postgres-url postgresql://fleet@db.internal/receiptfleet
              RECEIPTFLEET_POSTGRES_URL=postgresql://… receiptfleet migrate
              receiptfleet migrate --config /etc/receiptfleet.json
            """)

    @OptionGroup var options: FleetOptions

    func run() throws {
        // Only the database: a migration job need not have the fleet's other files (apps, keys).
        var configuration = try PostgresConfiguration(ResolvedConfiguration(flags: options)[Settings.postgresURL])
        // A migration may rewrite a large table for minutes; the deadline only ends a frozen server's wait.
        configuration.callTimeout = .seconds(3_600)
        let connection = try PostgresConnection(configuration: configuration)
        let applied = try Migrator.migrate(connection)
        if applied.isEmpty {
            print("The schema is up to date (version \(Migrator.latestVersion)).")
        } else {
            print("Applied migrations \(applied.map(String.init).joined(separator: ", ")); "
                + "the schema is at version \(Migrator.latestVersion).")
        }
        // The key is the fleet's configuration, not the database's: only rotate-key can encrypt these.
        let plaintext = try WebhookRegistry(database: connection).plaintextSecretCount()
        if plaintext > 0 {
            print("warning: \(plaintext) webhook secret(s) are stored unencrypted, from before migration 10. "
                + "Run `receiptfleet webhooks rotate-key` with webhook-secret-key set to encrypt them.")
        }
    }
}
