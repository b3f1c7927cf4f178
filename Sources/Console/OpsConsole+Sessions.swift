import AccessTokens
import Crypto
import Fleet
import FleetConfiguration
import Foundation
import Hummingbird

/// Logging in with an operator token, the session cookie, and the CSRF token every action carries.
extension OpsConsole {
    static let cookieName = "rf_console"

    /// The operator behind a request's session cookie: who, the session's CSRF token, and its id.
    struct Operator: Sendable {
        var name: String
        var csrf: String
        var sessionID: String
        /// What stops the fleet now, shown at the top of every page this operator sees.
        var banners: [Banner] = []
    }

    func loginPage(_ request: Request) async throws -> Response {
        page("login", LoginView(problem: nil))
    }

    /// Wrong logins one address may try in a window, fleet-wide, before it must wait for the window's end.
    public static let loginAttempts = 10
    static let loginWindow = Duration.seconds(15 * 60)

    /// A token for a session: each login takes one of the address's tries first (an IPv6 address's
    /// /64 shares them), and is refused once they are used up (429) and while Redis cannot count
    /// them (503), since guessing would then be unlimited; a login that succeeds gives its try back.
    func logIn(_ request: Request, from address: String?) async throws -> Response {
        let form = try await Form(request)
        let address = address ?? "unknown"
        let (taken, refusedFor): (Int, Duration?)
        do {
            (taken, refusedFor) = try await lanes.run { desk in
                try desk.store.takeLoginTry(from: address, limit: Self.loginAttempts, window: Self.loginWindow)
            }
        } catch {
            logger.warning("console: a login refused: Redis cannot count wrong logins", metadata: ["error": "\(error)"])
            return page("login", LoginView(problem: "Logging in is not possible right now (the fleet's Redis does not answer). Try again shortly."),
                        status: .serviceUnavailable)
        }
        if let refusedFor {
            let minutes = Int((refusedFor / .seconds(60)).rounded(.up))
            var response = page("login", LoginView(problem: "Too many wrong tokens from your address. Try again in \(minutes) minute\(minutes == 1 ? "" : "s")."),
                                status: .tooManyRequests)
            response.headers[.retryAfter] = "\(Int((refusedFor / .seconds(1)).rounded(.up)))"
            return response
        }
        guard let grant = settings.operators.grant(presenting: form["token"] ?? "") else {
            // One line when an address runs out of tries, not one per guess.
            if taken == Self.loginAttempts {
                logger.warning("console: logins refused for a while after wrong tokens",
                               metadata: ["address": "\(address)", "wrong_tokens": "\(taken)", "for": "\(Self.loginWindow)"])
            }
            // Slows guessing down; a real token is 16 characters or more, so guessing cannot win anyway.
            try await Task.sleep(for: .seconds(1))
            return page("login", LoginView(problem: "That is not an operator token. Operator tokens are set by console-tokens, not api-tokens."),
                        status: .unauthorized)
        }
        let lifetime = settings.sessionLifetime
        let (id, _) = try await lanes.run { desk in
            try desk.store.returnLoginTry(from: address)
            return try desk.store.startSession(for: grant.name, tokenMark: grant.mark, lifetime: lifetime)
        }
        logger.notice("console: logged in", metadata: ["operator": "\(grant.name)"])
        return Self.redirect(to: "/console", cookie: sessionCookie(id, maxAge: Int(lifetime.components.seconds)))
    }

    func logOut(_ request: Request) async throws -> Response {
        let who = try await operatorActing(request)
        try await lanes.run { desk in try desk.store.endSession(id: who.operator.sessionID) }
        logger.notice("console: logged out", metadata: ["operator": "\(who.operator.name)"])
        return Self.redirect(to: "/console/login", cookie: sessionCookie("", maxAge: 0))
    }

    /// The operator looking at a page; throws `ConsoleProblem.loginNeeded` without a live session.
    /// A session whose operator token was removed or rotated out since it opened ends here.
    func viewer(_ request: Request) async throws -> Operator {
        guard let id = request.cookies[Self.cookieName]?.value, !id.isEmpty,
              let session = try await lanes.run({ desk in try desk.store.session(id: id) })
        else { throw ConsoleProblem.loginNeeded }
        guard settings.operators.holds(mark: session.tokenMark, for: session.operatorName) else {
            try await lanes.run { desk in try desk.store.endSession(id: id) }
            logger.notice("console: a session ended: its operator token is no longer configured",
                          metadata: ["operator": "\(session.operatorName)"])
            throw ConsoleProblem.loginNeeded
        }
        let (groups, apps) = ([FleetSettings.serverAPIGroup], fleet.apps.names)
        let banners = try await lanes.run { [clock] desk in
            let standing = try desk.gate.standing(groups: groups, apps: apps)
            // A halt an operator made names them: theirs is the latest recorded pause with its reason.
            let pausedBy = try standing.fleet.flatMap { halt in
                try desk.ledger.latestAudited("fleet.pause").flatMap { $0.details["reason"] == halt.reason ? $0 : nil }
            }
            return Banner.all(standing, pausedBy: pausedBy, now: clock.now())
        }
        return Operator(name: session.operatorName, csrf: session.csrfToken, sessionID: id, banners: banners)
    }

    /// The operator posting a form, and the form: its CSRF token must be the session's.
    func operatorActing(_ request: Request) async throws -> (operator: Operator, form: Form) {
        let who = try await viewer(request)
        let form = try await Form(request)
        guard let presented = form["csrf"], digestsEqual(Self.digest(presented), Self.digest(who.csrf)) else {
            logger.warning("console: a form with a stale or missing CSRF token", metadata: ["operator": "\(who.name)", "path": "\(request.uri.path)"])
            throw ConsoleProblem.staleForm
        }
        return (who, form)
    }

    private func sessionCookie(_ value: String, maxAge: Int) -> Cookie {
        Cookie(name: Self.cookieName, value: value, maxAge: maxAge, path: "/console", secure: settings.secureCookies,
               httpOnly: true, sameSite: .strict)
    }

    private static func digest(_ text: String) -> [UInt8] {
        Array(SHA256.hash(data: Array(text.utf8)))
    }
}

struct LoginView {
    let chrome = Chrome("Log in")
    var problem: String?
}

/// A posted form (application/x-www-form-urlencoded), at most 16 KiB; or a form sent by GET, its
/// query (where a browser writes a space as `+`, which a URL's own query decoding keeps).
struct Form: Sendable {
    private var fields: [String: String] = [:]
    /// Every value of a name sent several times (checkboxes), in order.
    private var repeated: [String: [String]] = [:]

    init(_ request: Request) async throws {
        let body = try await request.body.collect(upTo: 16 * 1024)
        try self.init(encoded: String(buffer: body))
    }

    init(query request: Request) throws {
        try self.init(encoded: request.uri.query ?? "")
    }

    private init(encoded text: String) throws {
        for pair in text.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = Self.decode(parts[0]), let value = Self.decode(parts.count > 1 ? parts[1] : "") else {
                throw ConsoleProblem.badRequest("The form could not be read; reload the page and try again.")
            }
            if fields[name] == nil { fields[name] = value }
            repeated[name, default: []].append(value)
        }
    }

    private static func decode(_ text: Substring) -> String? {
        text.replacingOccurrences(of: "+", with: " ").removingPercentEncoding
    }

    subscript(_ name: String) -> String? { fields[name] }

    func values(_ name: String) -> [String] { repeated[name] ?? [] }
}
