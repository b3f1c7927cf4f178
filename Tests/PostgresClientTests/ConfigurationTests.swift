import CLibpq
import Foundation
import PostgresClient
import Redaction
import TestSupport
import Testing

@Suite struct ConfigurationTests {
    static let password = "receiptfleet-dev"

    @Test func theDescriptionMasksThePasswordInEveryForm() throws {
        let forms = [
            "postgresql://app:\(Self.password)@db.internal:5432/ledger?sslmode=require",
            "host=db.internal dbname=ledger user=app password=\(Self.password) sslpassword=\(Self.password)",
        ]
        for form in forms {
            let configuration = try PostgresConfiguration(form)
            #expect(configuration.description.contains("password=***"))
            #expect(configuration.description.contains("host=db.internal"))
            for shown in [configuration.description, String(reflecting: configuration), Self.dumped(configuration)] {
                #expect(!shown.contains(Self.password))
            }
        }
    }

    /// The description is rendered as key=value and then masked, so every password must come out
    /// quoted well enough for `Redact.conninfo` to find all of it.
    @Test(arguments: ["two words", "it's", #"back\slash"#, "tab\there", "new\nline", "p@ss:w/rd?&=#%41", "密码🔑"])
    func theDescriptionMasksAnyPassword(password: String) throws {
        let encoded = try #require(password.addingPercentEncoding(withAllowedCharacters: .alphanumerics))
        let configuration = try PostgresConfiguration("postgresql://app:\(encoded)@db.internal:5432/ledger?sslmode=require")
        let shown = configuration.description.split(separator: " ")
        for kept in ["user=app", "password=***", "host=db.internal", "port=5432", "dbname=ledger", "sslmode=require"] {
            #expect(shown.contains(Substring(kept)), "\(configuration)")
        }
        #expect(!configuration.description.contains(password))
    }

    /// `Redact` keeps its own list of secret keywords; libpq marks its secrets with the display
    /// character `*`, and a libpq that adds one must not find it shown.
    @Test func everyParameterLibpqHidesIsASecretToRedact() throws {
        let defaults = try #require(PQconndefaults())
        defer { PQconninfoFree(defaults) }
        var hidden: [String] = []
        var option = defaults
        while let keyword = option.pointee.keyword {
            if option.pointee.dispchar.map({ String(cString: $0) }) == "*" { hidden.append(String(cString: keyword)) }
            option += 1
        }
        #expect(hidden.contains("password"))
        #expect(Set(hidden).isSubset(of: Redact.secretKeywords), "\(hidden)")
    }

    @Test func connectTimeoutAndApplicationNameComeFromTheString() throws {
        let configuration = try PostgresConfiguration("host=h connect_timeout=3 application_name=relay")
        #expect(configuration.connectTimeout == .seconds(3))
        #expect(configuration.applicationName == "relay")
        #expect(configuration.description.contains("connect_timeout=3"))
    }

    @Test func anotherDatabaseOnTheSameServerKeepsTheCredentials() async throws {
        try await TestDatabase.with { database in
            let other = try PostgresConfiguration(TestServers.postgresURL).database(database.name)
            #expect(other.description.contains("dbname=\(database.name)"))
            #expect(!other.description.contains(Self.password))
            // A child process gets the whole string, password included, and reaches the same database.
            let handedOn = try PostgresConfiguration(other.unmaskedConnectionString)
            let name = try await onOwnThread {
                try PostgresConnection(configuration: handedOn).query("SELECT current_database() AS d")[0]["d"].text()
            }
            #expect(name == database.name)
        }
    }

    @Test func anUnreadableStringIsRejectedWithoutQuotingIt() throws {
        let error = try #require(throws: PostgresError.self) {
            try PostgresConfiguration("postgresql://app:s3cr%ZZet@db/ledger")
        }
        #expect(error.kind == .invalidConfiguration)
        #expect(!error.description.contains("s3cr"))
    }

    @Test func urlAndKeyValueFormsOpenSessionsInUTCWithTheApplicationName() async throws {
        let url = try #require(URLComponents(string: TestServers.postgresURL))
        let keyValue = "host=\(url.host!) port=\(url.port!) dbname=\(url.path.dropFirst()) "
            + "user=\(url.user!) password=\(url.password!) application_name=key-value-form"
        let urlForm = Self.adding("application_name=url-form")
        let settings = try await onOwnThread {
            try [urlForm, keyValue].map { form in
                let connection = try PostgresConnection(configuration: PostgresConfiguration(form))
                let row = try connection.query(
                    "SELECT current_setting('application_name') AS app, current_setting('TimeZone') AS zone, "
                        + "current_setting('DateStyle') AS style")[0]
                return [try row["app"].text(), try row["zone"].text(), try row["style"].text()]
            }
        }
        #expect(settings == [["url-form", "UTC", "ISO, MDY"], ["key-value-form", "UTC", "ISO, MDY"]])
    }

    /// sslmode means nothing to this client; it has an effect only if libpq received it.
    @Test func queryParametersPassThroughToLibpq() async throws {
        let required = try PostgresConfiguration(Self.adding("sslmode=require"))
        let (serverHasSSL, outcome) = try await onOwnThread {
            let serverHasSSL = try connect().query("SHOW ssl")[0]["ssl"].text() == "on"
            let outcome = Result {
                try PostgresConnection(configuration: required)
                    .query("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()")[0]["ssl"].bool()
            }
            return (serverHasSSL, outcome)
        }
        if serverHasSSL {
            #expect(try outcome.get() == true)
        } else {
            let error = try #require(throws: PostgresError.self) { try outcome.get() }
            #expect(error.kind == .connectionFailed)
            #expect(error.message.contains("SSL"))
        }
    }

    /// The test server's URL with one more query parameter.
    private static func adding(_ parameter: String) -> String {
        TestServers.postgresURL + (TestServers.postgresURL.contains("?") ? "&" : "?") + parameter
    }

    private static func dumped(_ configuration: PostgresConfiguration) -> String {
        var text = ""
        dump(configuration, to: &text)
        return text
    }
}
