import AppStore
import Fleet
import FleetConfiguration
import JobQueue
import Testing

/// The deployment's apps: found by name and by bundle id; two apps never share either.
@Suite struct AppCatalogTests {
    @Test func appsAreFoundByNameAndByBundleIDAndNeverShareEither() throws {
        let photos = AppConfiguration(name: "photos", bundleIDs: ["com.example.photos"], sharedSecrets: [SharedSecret("p")])
        let video = AppConfiguration(name: "video", bundleIDs: ["com.example.video", "com.example.video.tv"])
        let catalog = try AppCatalog([photos, video])
        #expect(catalog.app(named: "video") == video)
        #expect(catalog.app(bundleID: "com.example.video.tv") == video)
        #expect(catalog.app(bundleID: "com.example.photos")?.sharedSecrets == [SharedSecret("p")])
        #expect(catalog.app(bundleID: "com.example.other") == nil)
        #expect(catalog.app(bundleID: nil) == nil)
        // One app that names no bundle id takes every receipt, as before apps were configured.
        #expect(AppCatalog.single().app(bundleID: "com.example.other")?.name == "default")
        #expect(AppCatalog.single(bundleIDs: ["com.example.photos"]).app(bundleID: "com.example.other") == nil)
        // A signed payload must name one of the bundle ids: Apple signs every developer's apps alike.
        #expect(catalog.app(signedFor: "com.example.video.tv") == video)
        #expect(catalog.app(signedFor: "com.example.other") == nil)
        #expect(catalog.app(signedFor: nil) == nil)
        #expect(AppCatalog.single().app(signedFor: "com.example.other") == nil)
        #expect(AppCatalog.single(bundleIDs: ["com.example.photos"]).app(signedFor: "com.example.photos")?.name == "default")

        #expect(throws: AppCatalogError.repeatedName("photos")) { try AppCatalog([photos, photos]) }
        var stealing = video
        stealing.bundleIDs = ["com.example.photos"]
        #expect(throws: AppCatalogError.sharedBundleID("com.example.photos", "photos", "video")) { try AppCatalog([photos, stealing]) }
        #expect(throws: AppCatalogError.empty) { try AppCatalog([]) }
    }

    /// An app's receipts go with its own secret, else the account's; a receipt of an app not
    /// known yet may be any app's, so every secret is a candidate, the account's first.
    @Test func eachAppIsVerifiedWithItsOwnSecretElseTheAccounts() throws {
        var settings = try FleetSettings.forTest(redisURL: "redis://localhost", postgresURL: "postgresql://localhost/x", rateLimit: try RateLimit(perSecond: 1, burst: 1))
        settings.sharedSecret = SharedSecret("account")
        settings.apps = try AppCatalog([
            AppConfiguration(name: "photos", bundleIDs: ["com.example.photos"], sharedSecrets: [SharedSecret("p2"), SharedSecret("p1")]),
            AppConfiguration(name: "video", bundleIDs: ["com.example.video"]),
        ])
        #expect(settings.sharedSecrets(forApp: "photos") == [SharedSecret("p2"), SharedSecret("p1")])
        #expect(settings.sharedSecrets(forApp: "video") == [SharedSecret("account")])
        #expect(settings.sharedSecrets(forApp: String?.none) == [SharedSecret("account"), SharedSecret("p2"), SharedSecret("p1")])
    }
}
