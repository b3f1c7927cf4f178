import AccessTokens
import AppStore
import Foundation

// The rules of serve's and console's own settings.
extension Rule where Value == NamedTokens {
    /// The API's clients: NAME:TOKEN or NAME(SCOPE+…):TOKEN entries, separated by commas or lines.
    public static var apiTokens: Rule {
        Rule("NAME:TOKEN or NAME(SCOPE+…):TOKEN entries, comma- or line-separated; scopes: "
             + APIScope.names.sorted().joined(separator: ", ")) { text, _ in try parsed(text, "API tokens", scopes: APIScope.names) }
    }

    /// The console's operator tokens: NAME:TOKEN entries, none of them also an API token (an API
    /// client must not open the console, nor an operator call the API with their console token).
    public static var operatorTokens: Rule {
        Rule("NAME:TOKEN entries, comma- or line-separated, none of them an API token") { text, configuration in
            let operators = try parsed(text, "console tokens")
            if let api = try? configuration[Settings.apiTokens], operators.sharesAToken(with: api) {
                throw InvalidValue("a console token is also an API token; give operators tokens of their own (`openssl rand -hex 32`)")
            }
            return operators
        }
    }

    private static func parsed(_ text: String, _ kind: String, scopes: Set<String> = []) throws -> NamedTokens {
        do {
            return try NamedTokens(parsing: text, kind: kind, scopes: scopes)
        } catch {
            throw InvalidValue(error.message)
        }
    }
}

extension Rule where Value == Set<AppStoreEnvironment> {
    public static var environments: Rule {
        Rule("Production, Sandbox or both, comma-separated") { text, _ in
            var environments = Set<AppStoreEnvironment>()
            for name in text.split(separator: ",") {
                guard let environment = AppStoreEnvironment(rawValue: name.trimmingCharacters(in: .whitespaces).capitalized) else {
                    throw InvalidValue("'\(name)' is neither Production nor Sandbox")
                }
                environments.insert(environment)
            }
            return environments
        }
        .showing { $0.map(\.rawValue).sorted().joined(separator: ",") }.writing { $0.map(\.rawValue).sorted().joined(separator: ",") }
    }
}

extension Rule where Value == ForwardedHeader {
    public static var forwardedHeader: Rule {
        Rule("x-forwarded-for or forwarded") { text, _ in
            guard let header = ForwardedHeader(rawValue: text.lowercased()) else {
                throw InvalidValue("'\(text)' is neither x-forwarded-for nor forwarded: name the header your proxy sets")
            }
            return header
        }
        .writing(\.rawValue)
    }
}

extension Rule where Value == String {
    public static var trustedProxies: Rule {
        .checked("IP addresses and CIDR networks, comma-separated") { _ = try TrustedProxies(parsing: $0) }
    }
}
