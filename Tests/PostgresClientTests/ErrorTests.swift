import Foundation
import PostgresClient
import TestSupport
import Testing

@Suite struct ErrorTests {
    @Test func aUniqueViolationCarriesTheServersSQLStateAndMessage() async throws {
        let outcome = try await onOwnThread {
            let connection = try connect()
            try connection.execute("CREATE TEMP TABLE accounts (email text CONSTRAINT accounts_email_key UNIQUE)")
            try connection.execute("INSERT INTO accounts VALUES ($1)", ["someone@example.com"])
            return Result { try connection.execute("INSERT INTO accounts VALUES ($1)", ["someone@example.com"]) }
        }
        let error = try #require(throws: PostgresError.self) { try outcome.get() }
        #expect(error.kind == .server)
        #expect(error.sqlState == "23505")
        #expect(error.isUniqueViolation)
        #expect(!error.isSerializationFailure && !error.isDeadlock)
        #expect(error.message == #"duplicate key value violates unique constraint "accounts_email_key""#)
        #expect(error.detail == "Key (email)=(someone@example.com) already exists.")
        // The detail quotes the row's values, which may be secret: it stays out of the description.
        #expect(error.description.contains("23505"))
        #expect(!error.description.contains("someone@example.com"))
    }

    @Test func aSyntaxErrorIsAServerErrorAndTheConnectionStaysUsable() async throws {
        let (outcome, afterwards) = try await onOwnThread {
            let connection = try connect()
            let outcome = Result { try connection.query("SELEKT 1") }
            return (outcome, try connection.query("SELECT 7 AS n")[0]["n"].int64())
        }
        let error = try #require(throws: PostgresError.self) { try outcome.get() }
        #expect(error.kind == .server)
        #expect(error.sqlState == "42601")
        #expect(error.message.contains("SELEKT"))
        #expect(afterwards == 7)
    }

    @Test func aWrongPasswordIsAClearErrorThatDoesNotQuoteIt() async throws {
        let wrongPassword = uniqueName("not-the-password")
        let configuration = try PostgresConfiguration(testURL(password: wrongPassword))
        let outcome = try await onOwnThread { Result { _ = try PostgresConnection(configuration: configuration) } }
        let error = try #require(throws: PostgresError.self) { try outcome.get() }
        #expect(error.kind == .connectionFailed)
        #expect(error.message.contains("password authentication failed"))
        #expect(!error.description.contains(wrongPassword))
        #expect(!String(reflecting: error).contains(wrongPassword))
    }

    @Test func anUnreachableServerIsAConnectionFailure() async throws {
        // Port 1 on loopback: nothing listens there, so the connection is refused at once.
        let configuration = try PostgresConfiguration("host=127.0.0.1 port=1 user=nobody password=hunter2 dbname=x")
        let outcome = try await onOwnThread { Result { _ = try PostgresConnection(configuration: configuration) } }
        let error = try #require(throws: PostgresError.self) { try outcome.get() }
        #expect(error.kind == .connectionFailed)
        #expect(error.message.contains("Connection refused"))
        #expect(!error.description.contains("hunter2"))
    }
}
