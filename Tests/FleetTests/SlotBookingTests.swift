@testable import Fleet
import Testing

/// How many of a batch's calls a worker books in one admission: those it can make within 5 ms
/// of the first one's slot, so that none is made much later than its own slot (benchmarks/run
/// overhead shows what it saves Redis: 5.9 commands a verification at concurrency 1, against 13–16
/// when every call had an admission of its own).
@Suite struct SlotBookingTests {
    @Test(arguments: [
        (upcoming: 8, lastCallMicroseconds: 500, booked: 8),  // Apple answers at once: the whole batch
        (upcoming: 8, lastCallMicroseconds: 1_250, booked: 4),  // 4 calls of 1.25 ms fit in 5 ms
        (upcoming: 3, lastCallMicroseconds: 100, booked: 3),  // never more than the batch has left
        (upcoming: 8, lastCallMicroseconds: 150_000, booked: 1),  // Apple's real latency: one by one
        (upcoming: 8, lastCallMicroseconds: 0, booked: 8),  // no measurement yet is not a division by zero
    ])
    func callsBookedAtOnce(upcoming: Int, lastCallMicroseconds: Int64, booked: Int) {
        #expect(PacedGate.callsToBook(upcoming: upcoming, lastCall: .microseconds(lastCallMicroseconds)) == booked)
    }

    /// How many jobs a thread reserves: what it verifies in about a second, up to jobs-per-batch.
    @Test(arguments: [
        (lastCallMicroseconds: 300, reserved: 16),  // Apple answers at once: the whole batch
        (lastCallMicroseconds: 150_000, reserved: 6),  // Apple's usual pace
        (lastCallMicroseconds: 2_000_000, reserved: 1),  // slower than a second: one at a time
        (lastCallMicroseconds: 0, reserved: 16),  // no measurement yet is not a division by zero
    ])
    func jobsReservedAtOnce(lastCallMicroseconds: Int64, reserved: Int) {
        #expect(Processor.batchSize(upTo: 16, lastCall: .microseconds(lastCallMicroseconds)) == reserved)
    }
}
