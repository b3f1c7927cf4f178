import Redaction
import Testing

/// The forms people write, each masked as an operator would expect to read it.
@Suite struct RedactExampleTests {
    @Test(arguments: [
        ("postgresql://u@db/x?sslmode=require&password=S3cret", "postgresql://u@db/x?sslmode=***&password=***"),
        ("postgresql://u:pw@h/db", "postgresql://u:***@h/db"),
        ("postgres://u:p%40ss@h:5432,h2:5433/db?Pass%77ord=x&sslmode=require#f", "postgres://u:***@h:5432,h2:5433/db?Pass%77ord=***&sslmode=***#f"),
        ("postgresql://u:p@ss:w/rd@db/x", "postgresql://u:***@db/x"),
        ("redis://:pw@h:6379/0", "redis://:***@h:6379/0"),
        ("rediss://user:pw@cache.internal:6380/1", "rediss://user:***@cache.internal:6380/1"),
        ("unix:///run/redis.sock?db=0&user=app&password=a%26b", "unix:///run/redis.sock?db=***&user=***&password=***"),
        ("redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379/0"),
        ("https://verify.internal/verifyReceipt?user=a@b", "https://verify.internal/verifyReceipt?user=***"),
        // A credential under any name: every value is masked.
        ("https://hooks.example.com/in?code=c0de&jwt=e.y.J&hmac=h&session=s&flag", "https://hooks.example.com/in?code=***&jwt=***&hmac=***&session=***&flag"),
        (" postgresql://fleet:S9lead@db/x", " postgresql://fleet:***@db/x"),
        ("\nredis://:S9lead@cache:6379/0", "\nredis://:***@cache:6379/0"),
    ])
    func urls(url: String, shown: String) {
        #expect(Redact.connectionString(url) == shown)
    }

    @Test(arguments: [
        ("host=db password=secret", "host=db password=***"),
        ("host=db password='two words' dbname=x", "host=db password=*** dbname=x"),
        (#"password = 'it\'s' host=db"#, "password = *** host=db"),
        (#"host=db password=two\ words user=u"#, "host=db password=*** user=u"),
        ("host=db\tsslpassword=key\npassword=pw", "host=db\tsslpassword=***\npassword=***"),
        ("PassWord=x host=db", "PassWord=*** host=db"),
        ("host=db password= user=u", "host=db password= ***"),  // libpq reads "user=u" as the password
        ("host=db password='never closed", "host=db password=***"),
        ("host=db password secret", "host=db password ***"),
        ("host=db options='-c search_path=app' user=u", "host=db options='-c search_path=app' user=u"),
    ])
    func conninfo(conninfo: String, shown: String) {
        #expect(Redact.connectionString(conninfo) == shown)
    }

    @Test func aKnownSecretIsMaskedInFreeText() {
        #expect(Redact.text(#"password "s3cret" is wrong for s3cret"#, hiding: "s3cret") == #"password "***" is wrong for ***"#)
        #expect(Redact.text("nothing to hide", hiding: "") == "nothing to hide")
    }
}

/// Where a URL points, for people who need no more (the console, the audit trail).
@Suite struct RedactWithoutQueryTests {
    @Test(arguments: [
        ("https://crm.example.com/hooks?token=abc", "https://crm.example.com/hooks?…"),
        ("https://user:pw@crm.example.com/hooks#part", "https://user:***@crm.example.com/hooks?…"),
        ("https://crm.example.com/hooks", "https://crm.example.com/hooks"),
    ])
    func urls(url: String, shown: String) {
        #expect(Redact.urlWithoutQuery(url) == shown)
    }
}
