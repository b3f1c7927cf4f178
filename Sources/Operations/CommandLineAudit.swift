import FleetConfiguration
import Foundation
import Ledger
import PostgresClient

/// Runs an operator's action from the command line and records it in the audit trail under the
/// OS user who ran it. When PostgreSQL cannot be reached the action still happens (a pause in
/// the middle of an incident must not wait for the database), with a warning that it went unrecorded.
public func audited<T>(
    _ action: String, target: String? = nil, details: [String: String] = [:], settings: FleetSettings,
    results: (T) -> [String: String] = { _ in [:] }, _ body: () throws -> T
) throws -> T {
    let record = AuditRecord(actor: osUser(), via: .cli, action: action, target: target, details: details)
    let warn = { (error: any Error) in
        FileHandle.standardError.write(Data("warning: the audit trail did not record \(action): \(error)\n".utf8))
    }
    let ledger: Ledger
    do {
        ledger = Ledger(try PostgresConnection(configuration: settings.postgresConfiguration()))
    } catch {
        warn(error)
        return try body()
    }
    return try ledger.audited(record, results: results, unrecorded: warn, body)
}

/// Who runs this command: the OS user, and the one behind sudo when there is one.
public func osUser() -> String {
    let name = getpwuid(geteuid()).flatMap { $0.pointee.pw_name.map { String(cString: $0) } }
        ?? ProcessInfo.processInfo.environment["USER"] ?? "uid \(geteuid())"
    guard let sudoer = ProcessInfo.processInfo.environment["SUDO_USER"], sudoer != name else { return name }
    return "\(sudoer) (as \(name) through sudo)"
}
