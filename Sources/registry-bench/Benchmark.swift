import Codecs
import TokenSealing
import Foundation
import RegistryCore
import RegistryLMDB
import Synchronization

/// `registry-bench` flags.
struct BenchmarkOptions {
    var submitters = 64
    var upsertsPerSubmitter = 200

    init?(_ arguments: [String]) {
        var rest = arguments[...]
        while let flag = rest.popFirst() {
            guard let value = rest.popFirst().flatMap({ Int($0) }), value > 0 else { return nil }
            switch flag {
            case "--submitters": submitters = value
            case "--upserts": upsertsPerSubmitter = value
            default: return nil
            }
        }
    }
}

/// The store-level group-commit benchmark: the same workload of durable
/// launch upserts (fsync on, a fresh environment on the real disk under the
/// current directory, not tmpfs) run twice, with group commit and with one
/// commit per upsert, printed side by side.
///
/// Limits: one process, so it measures the store and its writer thread, not
/// HTTP; every upsert creates a new device (one index entry per write), the
/// common launch path of an unchanged device is cheaper.
struct Benchmark {
    let options: BenchmarkOptions

    struct Outcome {
        var upsertsPerSecond: Double
        var meanBatch: Double
        var p50: Double
        var p99: Double
    }

    func run() async {
        do {
            print("registry-bench: \(options.submitters) submitters x \(options.upsertsPerSubmitter) durable upserts")
            let grouped = try await measure(maxBatchSize: 1_000)
            let single = try await measure(maxBatchSize: 1)
            print("mode                    upserts/s   mean batch   p50 ms   p99 ms")
            for (name, o) in [("group commit (<=1000)", grouped), ("one commit per upsert", single)] {
                print(name.padding(toLength: 22, withPad: " ", startingAt: 0)
                      + pad(String(format: "%.0f", o.upsertsPerSecond), 11) + pad(String(format: "%.1f", o.meanBatch), 13)
                      + pad(String(format: "%.2f", o.p50 * 1000), 9) + pad(String(format: "%.2f", o.p99 * 1000), 9))
            }
            print(String(format: "ratio (group / single): %.1fx", grouped.upsertsPerSecond / single.upsertsPerSecond))
        } catch {
            FileHandle.standardError.write(Data("registry-bench failed: \(error)\n".utf8))
            exit(1)
        }
    }

    private func pad(_ text: String, _ width: Int) -> String {
        String(repeating: " ", count: max(0, width - text.count)) + text
    }

    /// One run in a fresh directory, removed afterwards.
    private func measure(maxBatchSize: Int) async throws -> Outcome {
        let directory = FileManager.default.currentDirectoryPath + "/.registry-bench-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let batches = Mutex((count: 0, commands: 0))
        var configuration = LMDBRegistryStore.Configuration(directory: directory, tokenKeys: try TokenKeyRing.generate())
        configuration.maxBatchSize = maxBatchSize
        configuration.onCommit = { report in batches.withLock { $0.count += 1; $0.commands += report.commands } }
        let store = try LMDBRegistryStore(configuration: configuration)
        defer { store.shutdown() }

        let perSubmitter = options.upsertsPerSubmitter
        let started = ContinuousClock.now
        let latencies = try await withThrowingTaskGroup(of: [Double].self) { group in
            for submitter in 0..<options.submitters {
                group.addTask {
                    var latencies: [Double] = []
                    latencies.reserveCapacity(perSubmitter)
                    for i in 0..<perSubmitter {
                        let begin = ContinuousClock.now
                        _ = try await store.registerDevice(DeviceRegistration(
                            userId: "bench-\(submitter)-\(i)", deviceId: "device",
                            pushToken: .set(Self.token(submitter * perSubmitter + i)), osVersion: "18.2"))
                        latencies.append((ContinuousClock.now - begin).inSeconds)
                    }
                    return latencies
                }
            }
            var all: [Double] = []
            for try await part in group { all += part }
            return all.sorted()
        }
        let elapsed = (ContinuousClock.now - started).inSeconds
        let (count, commands) = batches.withLock { ($0.count, $0.commands) }
        return Outcome(upsertsPerSecond: Double(latencies.count) / elapsed,
                       meanBatch: Double(commands) / Double(max(1, count)),
                       p50: latencies[latencies.count / 2],
                       p99: latencies[min(latencies.count - 1, latencies.count * 99 / 100)])
    }

    private static func token(_ i: Int) -> String {
        let hex = String(i, radix: 16)
        return String(repeating: "0", count: 64 - hex.count) + hex
    }
}
