import Codecs
import Dispatch
import Synchronization

/// Throughput of the operations on the request path, for a benchmark tool
/// or a test to print: how many seal-then-open pairs, and how many index
/// keys, one sealer manages per second on `threads` threads at once.
/// Numbers from a debug build say little; measure a release build.
///
/// Measured with a release build (OpenSSL 3.0.19, 2-core AMD EPYC shared
/// with other builds, hence the spread; 32-byte tokens, 2 s per figure, 6
/// runs): one thread 460,000-640,000 seal+open pairs/s (about 1.8 µs a pair)
/// and 1.1-1.45 million index keys/s (about 0.8 µs); two threads 0.7-1.15
/// million pairs/s and 1.05-2.2 million index keys/s. Keying a fresh OpenSSL
/// context on every call, with `RAND_bytes` nonces and one-shot `HMAC()`,
/// had given 225,000-355,000 pairs/s and 390,000-610,000 index keys/s on
/// one thread.
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
        return Double(calls.load(ordering: .relaxed)) / elapsed.inSeconds
    }
}
