import PostgresClient
import TestSupport
import Testing

@Suite struct NotificationTests {
    @Test func aNotifyFromAnotherSessionArrivesWithChannelAndPayload() async throws {
        // Mixed case and a space: the channel is quoted as an identifier, not folded or split.
        let channel = uniqueName("Outbox Events")
        let (received, senderPID) = try await onOwnThread {
            let listener = try connect()
            try listener.listen(channel)
            let sender = try connect()
            try sender.query("SELECT pg_notify($1, $2)", [.text(channel), #"{"id": 42, "note": "it's ✓"}"#])
            return (try listener.waitForNotifications(timeout: .seconds(5)), sender.backendPID)
        }
        try #require(received.count == 1)
        #expect(received[0].channel == channel)
        #expect(received[0].payload == #"{"id": 42, "note": "it's ✓"}"#)
        #expect(received[0].senderPID == senderPID)
    }

    @Test func waitingTimesOutEmptyWhenNothingIsSent() async throws {
        let channel = uniqueName("quiet")
        let (received, waited) = try await onOwnThread {
            let listener = try connect()
            try listener.listen(channel)
            try connect().query("SELECT pg_notify($1, 'elsewhere')", [.text(uniqueName("other"))])
            let start = ContinuousClock.now
            let received = try listener.waitForNotifications(timeout: .milliseconds(300))
            return (received, ContinuousClock.now - start)
        }
        #expect(received.isEmpty)
        #expect(waited >= .milliseconds(300))
        #expect(waited < .seconds(3))
    }

    @Test func notificationsArriveInCommitOrder() async throws {
        let channel = uniqueName("batch")
        let received = try await onOwnThread {
            let listener = try connect()
            try listener.listen(channel)
            try connect().transaction { sender in
                for payload in ["one", "two", "three"] {
                    try sender.query("SELECT pg_notify($1, $2)", [.text(channel), .text(payload)])
                }
            }
            var received: [String] = []
            let deadline = ContinuousClock.now + .seconds(5)
            while received.count < 3, ContinuousClock.now < deadline {
                received += try listener.waitForNotifications(timeout: deadline - .now).map(\.payload)
            }
            return received
        }
        #expect(received == ["one", "two", "three"])
    }
}
