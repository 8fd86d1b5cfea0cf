import Dispatch
import Synchronization

/// Throughput of the operations on the request path, for a benchmark tool
/// or a test to print: how many seal-then-open pairs, and how many index
/// keys, one sealer manages per second on `threads` threads at once.
/// Numbers from a debug build say little; measure a release build.
public enum TokenSealingBenchmark {
    public struct Result: Sendable, CustomStringConvertible {
        public let threads: Int
        public let tokenLength: Int
        /// seal followed by open of the result, per second, all threads together.
        public let sealOpenPairsPerSecond: Double
        /// indexKey(for:context:) per second, all threads together.
        public let indexKeysPerSecond: Double

        public var description: String {
            "\(threads) thread(s), \(tokenLength)-byte tokens: "
                + "\(Int(sealOpenPairsPerSecond)) seal+open pairs/s, \(Int(indexKeysPerSecond)) index keys/s"
        }
    }

    /// Runs each measurement for about `duration` on `threads` threads sharing one sealer of a generated ring.
    public static func run(threads: Int = 1, duration: Duration = .seconds(1), tokenLength: Int = 32) throws -> Result {
        let sealer = TokenSealer(ring: try TokenKeyRing.generate())
        let context = Array("push".utf8)
        let token = [UInt8](repeating: 0xA5, count: tokenLength)
        let pairs = measure(threads: threads, duration: duration) {
            let sealed = sealer.seal(token, context: context)
            precondition((try? sealer.open(sealed, context: context)) == token)
        }
        let indexKeys = measure(threads: threads, duration: duration) {
            precondition(sealer.indexKey(for: token, context: context).count == TokenSealer.indexKeyLength)
        }
        return Result(threads: threads, tokenLength: tokenLength, sealOpenPairsPerSecond: pairs,
                      indexKeysPerSecond: indexKeys)
    }

    /// Calls `operation` on every thread until `duration` has passed (the
    /// clock is read every 256 calls); answers calls per second over all threads.
    private static func measure(threads: Int, duration: Duration, _ operation: @Sendable () -> Void) -> Double {
        let calls = Atomic<Int>(0)
        let clock = ContinuousClock()
        let start = clock.now
        let deadline = start + duration
        DispatchQueue.concurrentPerform(iterations: threads) { _ in
            var count = 0
            repeat {
                for _ in 0..<256 { operation() }
                count += 256
            } while clock.now < deadline
            calls.add(count, ordering: .relaxed)
        }
        let elapsed = clock.now - start
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return Double(calls.load(ordering: .relaxed)) / seconds
    }
}
