import Hummingbird
import JobQueue
import Logging
import RedisClient

/// What a console request can run into, each shown as a page that says what to do; never a stack trace.
enum ConsoleProblem: Error {
    /// No session, or it expired: log in (again).
    case loginNeeded
    /// The form's CSRF token is not the session's (an old page, or a page from elsewhere).
    case staleForm
    case notFound(String)
    case badRequest(String)
}

extension ConsoleProblem {
    /// The longest query value a console page takes: a search or a filter, never a document.
    static let longestQueryValue = 1_024
}

/// In front of every console route: turns problems into pages, and any other failure into a page
/// that says it is logged (the log has the error, which names hosts and causes, never secrets).
struct ConsolePagesMiddleware<Context: RequestContext>: RouterMiddleware {
    let console: OpsConsole

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            try Self.checkQuery(request.uri.queryParameters)
            return try await next(request, context)
        } catch let problem as ConsoleProblem {
            return console.page(for: problem, method: request.method)
        } catch let error as any HTTPResponseError where error.status == .contentTooLarge {
            return console.page(for: .badRequest("The form is too large."), method: request.method)
        } catch where Self.redisIsNotAnswering(error) {
            console.logger.warning("console: Redis is not answering", metadata: ["path": "\(request.uri.path)", "error": "\(error)"])
            return console.page("error", ErrorView(
                heading: "Redis is not answering",
                message: "The fleet's Redis did not answer within \(ConsoleDesk.redisDeadline), so this page cannot be shown and nothing was changed. "
                    + "The workers wait for it too. Check the Redis server (receiptfleet status says the same); this page works again by itself once it answers.",
                back: request.uri.path, backLabel: "Try again"), status: .serviceUnavailable)
        } catch {
            console.logger.error("console: a request failed", metadata: ["path": "\(request.uri.path)", "error": "\(error)"])
            return console.page("error", ErrorView(
                heading: "Something failed", message: "The server could not do this: \(Self.short(error)). It is logged; try again.",
                back: "/console", backLabel: "Back to the overview"), status: .internalServerError)
        }
    }

    /// Every query value a page reads is text a person typed: one holding a control character (a
    /// NUL, which PostgreSQL refuses) or longer than a search can be is refused for all of them.
    private static func checkQuery(_ parameters: Hummingbird.Parameters) throws(ConsoleProblem) {
        for (name, value) in parameters {
            guard value.utf8.count <= ConsoleProblem.longestQueryValue,
                  !value.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
            else {
                throw .badRequest("The value of '\(name.prefix(40))' holds a control character or is over \(ConsoleProblem.longestQueryValue) bytes.")
            }
        }
    }

    /// A Redis that cannot be reached or does not answer in time, as the console's clients throw it.
    private static func redisIsNotAnswering(_ error: any Error) -> Bool {
        switch error {
        case let error as RedisError: error.meansRedisIsNotAnswering
        case QueueError.redis(let error): error.meansRedisIsNotAnswering
        default: false
        }
    }

    /// The first line of the error, at most 300 characters: the clients' errors name causes, not secrets.
    private static func short(_ error: any Error) -> String {
        String(String(describing: error).prefix { $0 != "\n" }.prefix(300))
    }
}

extension OpsConsole {
    func page(for problem: ConsoleProblem, method: HTTPRequest.Method) -> Response {
        switch problem {
        case .loginNeeded:
            // A page asked for goes to the login form; a form posted gets told why nothing happened.
            if method == .get { return Self.redirect(to: "/console/login") }
            return page("error", ErrorView(
                heading: "Please log in again", message: "Your session has ended, so nothing was done. Log in and try again.",
                back: "/console/login", backLabel: "Log in"), status: .unauthorized)
        case .staleForm:
            return page("error", ErrorView(
                heading: "This form is out of date",
                message: "Its security token does not match your session (it was opened before you logged in again, or on another site), so nothing was done. Reload the page and try again.",
                back: "/console", backLabel: "Back to the overview"), status: .forbidden)
        case .notFound(let message):
            return page("error", ErrorView(heading: "Not found", message: message, back: "/console", backLabel: "Back to the overview"),
                        status: .notFound)
        case .badRequest(let message):
            return page("error", ErrorView(heading: "Cannot do that", message: message, back: "/console", backLabel: "Back to the overview"),
                        status: .badRequest)
        }
    }
}

struct ErrorView {
    let chrome: Chrome
    var heading: String
    var message: String
    var back: String
    var backLabel: String

    init(heading: String, message: String, back: String, backLabel: String) {
        (chrome, self.heading, self.message, self.back, self.backLabel) = (Chrome(heading), heading, message, back, backLabel)
    }
}
