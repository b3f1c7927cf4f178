import Foundation

/// The number of file descriptors this process has open.
public func openFileDescriptorCount() -> Int {
    (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1
}

/// How many more file descriptors are open after `body` than before it, once the count settles.
///
/// The count is the whole process's, so `scripts/test` runs the leak tests in a pass of their own; the count is still watched for up to 10 s and the lowest
/// value taken, and callers allow a small margin: a real leak in a loop of a thousand
/// connections leaves hundreds behind.
public func descriptorsLeaked(by body: () async throws -> Void) async throws -> Int {
    let before = openFileDescriptorCount()
    try await body()
    var lowest = openFileDescriptorCount()
    try await eventually(within: .seconds(10), every: .milliseconds(100)) {
        lowest = min(lowest, openFileDescriptorCount())
        return lowest <= before
    }
    return lowest - before
}

/// Descriptors that other suites, running meanwhile, may still hold when a leak test ends.
public let allowedDescriptorNoise = 16
