/// What Apple's verifyReceipt statuses mean, in a few words, for people reading a count of them
/// (the console's answer mix and dead letters, the demo's summary). "none" is no answer at all.
public enum AppleStatusMeaning {
    public static func of(_ status: String) -> String {
        switch status {
        case "0": "valid"
        case "none": "no answer (timeout, error page, connection)"
        case "21000": "the request was malformed"
        case "21002": "the receipt data was malformed"
        case "21003": "the receipt could not be authenticated"
        case "21004": "the shared secret does not match"
        case "21005": "Apple's server was unavailable"
        case "21006": "valid, but the subscription has expired"
        case "21007": "a sandbox receipt sent to production"
        case "21008": "a production receipt sent to the sandbox"
        case "21009": "Apple's internal data access error"
        case "21010": "the account was not found or was deleted"
        default: status.hasPrefix("211") ? "Apple's internal error" : "other"
        }
    }
}
