import AppStore
import Foundation

/// The deployment's apps. Without `apps-file`, the one app `default`: its bundle ids are
/// `apple-bundle-id`, its Apple id `apple-app-id`, and its receipts go with the account's shared
/// secret. With it, a JSON object of app name to the app:
///
///     {"photos": {"bundle_ids": ["com.example.photos"], "shared_secret_file": "/etc/receiptfleet/photos.secret",
///                 "apple_id": 1460000001, "refund_preference": "decline"},
///      "video":  {"bundle_ids": ["com.example.video", "com.example.video.tv"]}}
///
/// `shared_secret_file` holds the app-specific shared secret (two during a rotation, the new one
/// first, as `shared-secret`); an app without one uses the account's primary shared secret.
/// `refund_preference` is the app's refund policy (as `refund-preference`; none: Apple decides alone).
extension Rule where Value == AppCatalog {
    public static var appsFile: Rule {
        Rule("a JSON file of app names to apps") { path, _ in try ResolvedConfiguration.apps(inFile: path) }
    }
}

extension Rule where Value == [String] {
    /// One shared secret, or two during a rotation (the new one first), comma- or line-separated.
    public static var sharedSecrets: Rule {
        Rule("one secret, or two during a rotation (comma- or line-separated)") { text, _ in try ResolvedConfiguration.sharedSecrets(in: text) }
    }
}

extension ResolvedConfiguration {
    public static func apps(inFile path: String) throws -> AppCatalog {
        func failure(_ reason: String) -> InvalidValue { InvalidValue("\(path): \(reason)") }
        guard let data = FileManager.default.contents(atPath: path) else { throw failure("cannot read it") }
        guard let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] else {
            throw failure("it is not a JSON object of app names to apps")
        }
        var apps: [AppConfiguration] = []
        for (name, entry) in object {
            guard name.range(of: #"^[a-z0-9][a-z0-9._-]{0,63}$"#, options: .regularExpression) != nil else {
                throw failure("'\(name)' is not an app name: 1 to 64 lowercase letters, digits, '.', '_' or '-'")
            }
            guard let fields = entry as? [String: Any] else { throw failure("\(name) is not an object") }
            let known = ["bundle_ids", "shared_secret_file", "apple_id", "refund_preference"]
            let unknown = Set(fields.keys).subtracting(known)
            guard unknown.isEmpty else {
                throw failure("\(name) has unknown fields \(unknown.sorted().joined(separator: ", ")) (known: \(known.joined(separator: ", ")))")
            }
            guard let bundleIDs = fields["bundle_ids"] as? [String], !bundleIDs.isEmpty, !bundleIDs.contains(where: \.isEmpty) else {
                throw failure("\(name) needs bundle_ids: a list of its bundle ids, which route its receipts and notifications")
            }
            var app = AppConfiguration(name: name, bundleIDs: Set(bundleIDs))
            if let file = fields["shared_secret_file"] {
                guard let file = file as? String, let secret = FileManager.default.contents(atPath: file) else {
                    throw failure("cannot read \(name)'s shared_secret_file \(fields["shared_secret_file"] ?? "")")
                }
                do {
                    app.sharedSecrets = try Self.sharedSecrets(in: String(decoding: secret, as: UTF8.self)).map(SharedSecret.init)
                } catch {
                    throw failure("\(name)'s shared_secret_file: \(error.reason)")
                }
            }
            if let id = fields["apple_id"] {
                guard let id = id as? Int64, id > 0 else { throw failure("\(name)'s apple_id must be the app's Apple id, a positive number") }
                app.appleID = id
            }
            if let preference = fields["refund_preference"] {
                guard let preference = (preference as? String).flatMap(RefundPreference.init(argument:)) else {
                    throw failure("\(name)'s refund_preference must be decline, grant-full or grant-prorated (leave it out for none)")
                }
                app.refundPreference = preference
            }
            apps.append(app)
        }
        do {
            return try AppCatalog(apps)
        } catch {
            throw failure(error.description)
        }
    }

    /// One shared secret, or two during a rotation (the new one first), comma- or line-separated.
    public static func sharedSecrets(in text: String) throws(InvalidValue) -> [String] {
        let secrets = text.split(whereSeparator: { $0 == "," || $0.isNewline })
            .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        guard (1...2).contains(secrets.count) else {
            throw InvalidValue(secrets.isEmpty
                ? "it is empty" : "it holds \(secrets.count) secrets: one, or two during a rotation (the new one first)")
        }
        return secrets
    }
}

extension Rule where Value == RefundPreference {
    public static var refundPreference: Rule {
        Rule("decline, grant-full or grant-prorated") { text, _ in
            guard let preference = RefundPreference(argument: text) else {
                throw InvalidValue("'\(text)' is not decline, grant-full or grant-prorated (leave it unset for none)")
            }
            return preference
        }
        .writing(\.argument)
        .offering(RefundPreference.allCases.map(\.argument))
    }
}
