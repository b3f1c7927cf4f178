import Foundation
import PostgresClient
import TestSupport
import Testing

@Suite struct ValueTests {
    /// One value of every supported type, as it goes in and as it must come back out.
    struct Sample: Sendable {
        var text: String?
        var number: Int64?
        var flag: Bool?
        var double: Double?
        var date: Date?
        var json: Data?
        var bytes: Data?

        var parameters: [PostgresValue] {
            [
                text.map(PostgresValue.text) ?? .null, number.map(PostgresValue.int64) ?? .null,
                flag.map(PostgresValue.bool) ?? .null, double.map(PostgresValue.double) ?? .null,
                date.map(PostgresValue.timestamptz) ?? .null, json.map(PostgresValue.jsonb) ?? .null,
                bytes.map(PostgresValue.bytea) ?? .null,
            ]
        }
    }

    struct Payload: Codable, Equatable {
        var name: String
        var tags: [String]
        var count: Int
    }

    static let payload = Payload(name: "Zoë \"quoted\" ✓", tags: ["a", "b"], count: 3)

    static let samples: [Sample] = [
        Sample(
            text: "O'Brien said \"hi\" \\ ünïcødé 日本語 🎉", number: .max, flag: true, double: 0.1,
            date: Date(timeIntervalSince1970: 1_700_000_000.123), json: try! JSONEncoder().encode(payload),
            bytes: Data([0x00, 0xFF, 0x00, 0x7F, 0x80, 0x5C, 0x78])),
        Sample(
            text: "", number: .min, flag: false, double: -1.0e300,
            date: Date(timeIntervalSince1970: -0.001),  // 1969-12-31 23:59:59.999, before the epoch
            json: Data(#"[1, "two", null]"#.utf8), bytes: Data()),
        Sample(
            text: "line\nbreak\ttab", number: 0, flag: true, double: .infinity,
            date: Date(timeIntervalSince1970: 4_102_444_800.5),  // 2100-01-01 00:00:00.500
            json: Data(#"{"k": {"nested": true}}"#.utf8), bytes: Data((0...255).map { UInt8($0) })),
        Sample(),  // every column NULL
    ]

    @Test func everyTypeRoundTripsThroughParameters() async throws {
        let read = try await onOwnThread {
            let connection = try connect()
            try connection.execute("""
                CREATE TEMP TABLE samples (
                    position int, t text, n bigint, b boolean, d double precision, ts timestamptz, j jsonb, y bytea)
                """)
            for (position, sample) in Self.samples.enumerated() {
                try connection.execute(
                    "INSERT INTO samples VALUES ($1::int, $2, $3, $4, $5, $6, $7, $8)",
                    [.int64(Int64(position))] + sample.parameters)
            }
            return try connection.query("SELECT t, n, b, d, ts, j, y FROM samples ORDER BY position").map { row in
                Sample(
                    text: try row["t"].text(), number: try row["n"].int64(), flag: try row["b"].bool(),
                    double: try row["d"].double(), date: try row["ts"].timestamptz(), json: try row["j"].jsonb(),
                    bytes: try row[6].bytea())
            }
        }
        try #require(read.count == Self.samples.count)
        for (got, sent) in zip(read, Self.samples) {
            #expect(got.text == sent.text)
            #expect(got.number == sent.number)
            #expect(got.flag == sent.flag)
            #expect(got.double == sent.double)
            #expect(got.date == sent.date)
            #expect(got.bytes == sent.bytes)
            // jsonb stores the meaning, not the spelling, so compare parsed JSON.
            #expect(try got.json.map(Self.parsed) == sent.json.map(Self.parsed))
        }
        #expect(try JSONDecoder().decode(Payload.self, from: #require(read[0].json)) == Self.payload)
    }

    @Test func timestampsAreSentAndReadInUTC() async throws {
        let (text, date) = try await onOwnThread {
            let connection = try connect()
            let row = try connection.query(
                "SELECT $1::timestamptz::text AS text, '2024-02-29 23:59:59.25+02'::timestamptz AS date",
                [.timestamptz(Date(timeIntervalSince1970: 1_709_251_199.25))])[0]
            return (try row["text"].text(), try row["date"].timestamptz())
        }
        #expect(text == "2024-02-29 23:59:59.25+00")
        #expect(date == Date(timeIntervalSince1970: 1_709_251_199.25 - 7200))
    }

    @Test func literalsBuildParameters() async throws {
        let row = try await onOwnThread {
            try connect().query(
                "SELECT $1 AS s, $2 AS i, $3 AS b, $4 AS d, $5::text AS n", ["x", 42, true, 1.5, nil])[0]
        }
        #expect(try row["s"].text() == "x")
        #expect(try row["i"].int64() == 42)
        #expect(try row["b"].bool() == true)
        #expect(try row["d"].double() == 1.5)
        #expect(try row["n"].isNull)
    }

    @Test func injectionLookingTextIsStoredLiterally() async throws {
        let table = uniqueName("victims")
        let hostile = "'); DROP TABLE \(table); --"
        let (stored, stillThere) = try await onOwnThread {
            let connection = try connect()
            try connection.execute("CREATE TEMP TABLE \(table) (name text)")
            try connection.execute("INSERT INTO \(table) (name) VALUES ($1)", [.text(hostile)])
            let matches = try connection.query("SELECT name FROM \(table) WHERE name = $1", [.text(hostile)])
            let exists = try connection.query("SELECT to_regclass($1) IS NOT NULL AS e", [.text("pg_temp.\(table)")])
            return (try matches.map { try $0["name"].text() }, try exists[0]["e"].bool())
        }
        #expect(stored == [hostile])
        #expect(stillThere == true)
    }

    @Test func missingColumnsAndWrongTypesAreErrorsNamingTheColumn() async throws {
        let row = try await onOwnThread { try connect().query("SELECT 'abc'::text AS label, NULL::bigint AS empty")[0] }

        let missing = try #require(throws: PostgresError.self) { try row["nope"] }
        #expect(missing.kind == .decoding)
        #expect(missing.message.contains("\"nope\""))
        #expect(missing.message.contains("\"label\""))

        let outOfRange = try #require(throws: PostgresError.self) { try row[2] }
        #expect(outOfRange.message.contains("index 2"))

        let mismatch = try #require(throws: PostgresError.self) { try row["label"].int64() }
        #expect(mismatch.kind == .decoding)
        #expect(mismatch.message.contains("\"label\" is text"))
        #expect(mismatch.message.contains("bigint"))

        #expect(try row["empty"].int64() == nil)
        #expect(try row["label"].text() == "abc")
    }

    @Test func textWithANulByteIsRefusedBeforeReachingTheServer() async throws {
        let result = try await onOwnThread { Result { try connect().query("SELECT $1", ["a\u{0}b"]) } }
        let error = try #require(throws: PostgresError.self) { try result.get() }
        #expect(error.kind == .misuse)
        #expect(error.message.contains("$1"))
    }

    /// JSON in one canonical spelling: parsed, then written back with sorted keys.
    private static func parsed(_ json: Data) throws -> Data {
        let value = try JSONSerialization.jsonObject(with: json, options: .fragmentsAllowed)
        return try JSONSerialization.data(withJSONObject: value, options: [.sortedKeys, .fragmentsAllowed])
    }
}
