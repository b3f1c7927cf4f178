import AppStore

/// One of the deployment's apps: its name in the ledger (`subscriptions.app`), the bundle ids its
/// receipts and notifications carry, and its app-specific shared secret, if it has one.
public struct AppConfiguration: Sendable, Equatable {
    public var name: String
    public var bundleIDs: Set<String>
    /// The app-specific shared secret, with the one it replaces during a rotation (the new one
    /// first); empty when the app's receipts go with the account's primary one (`shared-secret`).
    public var sharedSecrets: [SharedSecret]
    /// The app's Apple id (`appAppleId`), checked in V2 notifications when set.
    public var appleID: Int64?
    /// The app's policy for refund requests: the preference its answers give Apple (none: Apple decides alone).
    public var refundPreference: RefundPreference?

    public init(
        name: String, bundleIDs: Set<String>, sharedSecrets: [SharedSecret] = [], appleID: Int64? = nil,
        refundPreference: RefundPreference? = nil
    ) {
        (self.name, self.bundleIDs, self.sharedSecrets, self.appleID) = (name, bundleIDs, sharedSecrets, appleID)
        self.refundPreference = refundPreference
    }

    /// As `config check` shows it: its bundle ids, whose shared secret it uses (never the secret),
    /// its Apple id and its refund preference.
    public var shown: String {
        let secret = switch sharedSecrets.count {
        case 0: "the account's shared secret"
        case 1: "its own shared secret (masked)"
        default: "its own shared secret (masked); rotating: the previous one is accepted too"
        }
        return bundleIDs.sorted().joined(separator: ",") + "; " + secret + (appleID.map { "; Apple id \($0)" } ?? "")
            + (refundPreference.map { "; refund preference \($0.argument)" } ?? "")
    }
}

/// The deployment's apps, by name and by bundle id: from `apps-file`, or the single app `default`
/// of `apple-bundle-id` and the account's shared secret.
public struct AppCatalog: Sendable, Equatable {
    public static let defaultAppName = "default"

    public let apps: [AppConfiguration]

    /// Throws when two apps share a name or a bundle id, or when there is none.
    public init(_ apps: [AppConfiguration]) throws(AppCatalogError) {
        guard !apps.isEmpty else { throw .empty }
        let apps = apps.sorted { $0.name < $1.name }
        var names: Set<String> = []
        var bundles: [String: String] = [:]
        for app in apps {
            guard !app.name.isEmpty, names.insert(app.name).inserted else { throw .repeatedName(app.name) }
            for bundle in app.bundleIDs {
                if let other = bundles.updateValue(app.name, forKey: bundle) { throw .sharedBundleID(bundle, other, app.name) }
            }
        }
        self.apps = apps
    }

    /// The one app `default`, whose receipts and notifications carry `bundleIDs` (none named: any).
    public static func single(bundleIDs: Set<String> = [], appleID: Int64? = nil, refundPreference: RefundPreference? = nil) -> AppCatalog {
        AppCatalog(unchecked: [AppConfiguration(
            name: defaultAppName, bundleIDs: bundleIDs, appleID: appleID, refundPreference: refundPreference)])
    }

    private init(unchecked apps: [AppConfiguration]) { self.apps = apps }

    public var names: [String] { apps.map(\.name) }

    /// Every bundle id of every app.
    public var bundleIDs: Set<String> { apps.reduce(into: []) { $0.formUnion($1.bundleIDs) } }

    public func app(named name: String) -> AppConfiguration? { apps.first { $0.name == name } }

    /// The app a caller named, checked; a caller that named none gets the only app, or nil when
    /// there are several (then it must name one, or something else must tell).
    public func resolve(_ name: String?) throws(AppCatalogError) -> String? {
        guard let name else { return apps.count == 1 ? apps[0].name : nil }
        guard app(named: name) != nil else { throw .unknownApp(name, names) }
        return name
    }

    /// The app a receipt or a V1 notification of `bundleID` belongs to. A deployment of one app
    /// that names no bundle id takes every one, as it did before apps were configured.
    public func app(bundleID: String?) -> AppConfiguration? {
        if apps.count == 1, apps[0].bundleIDs.isEmpty { return apps[0] }
        guard let bundleID else { return nil }
        return apps.first { $0.bundleIDs.contains(bundleID) }
    }

    /// The app a payload Apple signed for `bundleID` belongs to (a V2 notification, a signed
    /// transaction): only one that names it. Apple signs every developer's apps with one chain, so
    /// the signature says who sent it and only the bundle id says it is ours: a deployment that names
    /// no bundle id accepts no signed payload.
    public func app(signedFor bundleID: String?) -> AppConfiguration? {
        guard let bundleID else { return nil }
        return apps.first { $0.bundleIDs.contains(bundleID) }
    }
}

public enum AppCatalogError: Error, Equatable, CustomStringConvertible {
    case empty
    case repeatedName(String)
    case sharedBundleID(String, String, String)
    case unknownApp(String, [String])

    public var description: String {
        switch self {
        case .empty: "it names no app"
        case .repeatedName(let name): name.isEmpty ? "an app has no name" : "the app name '\(name)' is used twice"
        case .sharedBundleID(let bundle, let first, let second): "the bundle id \(bundle) belongs to both \(first) and \(second)"
        case .unknownApp(let name, let names): "No app is named '\(name)'; this deployment's apps are: \(names.joined(separator: ", "))."
        }
    }
}

extension FleetSettings {
    /// The bundle id the Server API's tokens name for `app`: its own when it has exactly one, else
    /// the key's (`apple-bundle-id`). Nil `app` (not known yet): the key's.
    public func serverAPIBundleID(forApp app: String?) -> String {
        let own = app.flatMap { apps.app(named: $0)?.bundleIDs }
        if let own, own.count == 1, let bundleID = own.first { return bundleID }
        return serverAPI?.key.bundleID ?? ""
    }

    /// The secrets `app`'s receipts are verified with, the current one first: the app's own, else
    /// the account's primary one. For a receipt of an app not known yet (nil: a registration that
    /// names none), every configured secret, the account's first.
    public func sharedSecrets(forApp app: String?) -> [SharedSecret] {
        let account = [sharedSecret, previousSharedSecret].compactMap(\.self)
        guard let app else {
            var all = account
            for secret in apps.apps.flatMap(\.sharedSecrets) where !all.contains(secret) { all.append(secret) }
            return all
        }
        let own = apps.app(named: app)?.sharedSecrets ?? []
        return own.isEmpty ? account : own
    }
}
