import Foundation

/// Where `serve` or `console` listens (`address`).
public struct ListenAddress: Sendable, CustomStringConvertible {
    public let host: String
    public let port: Int

    public var parts: (host: String, port: Int) { (host, port) }
    public var description: String { "\(host):\(port)" }

    /// HOST:PORT or [IPv6]:PORT.
    public init?(_ text: String) {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]),
              (0...65_535).contains(port), colon > text.startIndex
        else { return nil }
        host = String(text[..<colon]).trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        self.port = port
    }

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// serve's, or console's (beside serve on the same host).
    public static func standard(for command: Commands) -> ListenAddress {
        ListenAddress(host: "127.0.0.1", port: command == .console ? 8081 : 8080)
    }
}

extension Rule where Value == ListenAddress {
    public static var listenAddress: Rule {
        Rule("HOST:PORT, port 0 for any free one") { text, configuration in
            guard let address = ListenAddress(text) else {
                throw InvalidValue("'\(text)' is not HOST:PORT, e.g. \(ListenAddress.standard(for: configuration.command))")
            }
            return address
        }
    }
}
