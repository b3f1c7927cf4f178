import Foundation
import PostgresClient
import TestSupport
import Testing


/// The test server's configuration, named so its sessions can be told apart in pg_stat_activity.
func testConfiguration(applicationName: String = "postgres-client-tests") throws -> PostgresConfiguration {
    var configuration = try PostgresConfiguration(TestServers.postgresURL)
    configuration.applicationName = applicationName
    return configuration
}

func connect() throws -> PostgresConnection {
    try PostgresConnection(configuration: testConfiguration())
}

/// The test server's URL with another password.
func testURL(password: String) throws -> String {
    var url = try #require(URLComponents(string: TestServers.postgresURL))
    url.password = password
    return try #require(url.string)
}
