import Foundation
import RegistryCore
import RegistryLMDB
import Synchronization

/// `registry-bench sweep-pages --dir DIR [--sample-every N]`: runs one sweep
/// over an LMDB environment no one else has open (a copy of a data set
/// `registry-bench load --expire-every 2` wrote) and counts what its commits
/// write, independent of the machine's speed: every write of the process is
/// LMDB's (its dirty pages, then part of a meta page), so the growth of
/// `wchar` in `/proc/self/io` across a step is its commit's bytes. Every
/// `N`th step (default 50) the file's trees are walked before and after
/// (`PageWalk`), which names the databases the step's pages belong to.
/// The step's time budget is lifted (steps of `sweepBatchSize` expiry
/// entries each), so the steps, like the counts, do not depend on the
/// machine or the build.
///
/// Prints one line per figure: steps, devices deleted, pages per deleted
/// device, pages per step (mean, p50, p99, max) for the steps that deleted
/// devices and for the others, and the sampled steps' pages by database.
///
/// With `--upserters N` (and `--devices`, the data set's size), N tasks
/// re-register live devices (odd `k`, with their own token) through the
/// store, one request at a time each, for `--baseline` seconds before the
/// sweep and during it: their latency percentiles in both phases, in one
/// process without HTTP (the machine's figure, not deterministic).
struct SweepPagesOptions {
    var directory = ""
    var sampleEvery = 50
    var upserters = 0
    var devices = 200_000
    var baselineSeconds = 5

    static let usage = """
        usage: registry-bench sweep-pages --dir DIR [--sample-every N] [--upserters N --devices N [--baseline S]]
        """

    init?(_ arguments: [String]) {
        var rest = arguments[...]
        while let flag = rest.popFirst() {
            guard let value = rest.popFirst() else { return nil }
            switch flag {
            case "--dir": directory = value
            case "--sample-every": guard let n = Int(value), n > 0 else { return nil }; sampleEvery = n
            case "--upserters": guard let n = Int(value), n >= 0 else { return nil }; upserters = n
            case "--devices": guard let n = Int(value), n > 1 else { return nil }; devices = n
            case "--baseline": guard let n = Int(value), n > 0 else { return nil }; baselineSeconds = n
            default: return nil
            }
        }
        guard !directory.isEmpty else { return nil }
    }
}

enum SweepPages {
    /// What the steps wrote, gathered by the sweep's step callback.
    private struct Tally {
        var lastWchar = 0
        var lastCommitSeconds = 0.0
        var steps: [(devices: Int, bytes: Int, commitSeconds: Double)] = []
        var before: PageWalk?
        /// Sampled steps that deleted devices, and the others (the owner cleanup's).
        var sampled = [0, 0]
        var sampledDevices = 0
        var byTree: [[String: Int]] = [[:], [:]]
        var failure: String?
    }

    static func run(_ options: SweepPagesOptions) async {
        let file = options.directory + "/data.mdb"
        let tally = Mutex(Tally())
        do {
            tally.withLock { $0.lastWchar = wchar() }
            var configuration = LMDBRegistryStore.Configuration(
                directory: options.directory, tokenKeys: try BenchKeys.ring(forEnvironment: options.directory))
            configuration.sweepStepBudget = .seconds(60)
            configuration.onCommit = { report in tally.withLock { $0.lastCommitSeconds = report.seconds } }
            configuration.onSweepBatch = { report in
                tally.withLock { t in
                    let now = wchar()
                    t.steps.append((report.counts.devices, now - t.lastWchar, t.lastCommitSeconds))
                    do {
                        if let before = t.before {
                            let kind = report.counts.devices > 0 ? 0 : 1
                            for (tree, pages) in PageWalk.written(before: before, after: try PageWalk(file: file)) {
                                t.byTree[kind][tree, default: 0] += pages
                            }
                            t.sampled[kind] += 1
                            t.sampledDevices += report.counts.devices
                            t.before = nil
                        }
                        if (t.steps.count + 1) % options.sampleEvery == 0 { t.before = try PageWalk(file: file) }
                    } catch {
                        t.failure = "\(error)"
                    }
                    t.lastWchar = wchar()
                }
            }
            let store = try LMDBRegistryStore(configuration: configuration)
            let load = Upserts(store: store, options: options)
            try await load.run(for: .seconds(options.baselineSeconds))
            load.phase.store(1, ordering: .relaxed)
            tally.withLock { $0.lastWchar = wchar() }
            let started = ContinuousClock.now
            let counts = try await store.sweep(dryRun: false)
            let seconds = (ContinuousClock.now - started).inSeconds
            load.phase.store(2, ordering: .relaxed)
            try await load.finish()
            store.shutdown()
            let t = tally.withLock { $0 }
            if let failure = t.failure { throw SweepPagesError(detail: failure) }
            report(t, counts: counts, seconds: seconds)
            load.report()
        } catch {
            FileHandle.standardError.write(Data("registry-bench sweep-pages failed: \(error)\n".utf8))
            exit(1)
        }
    }

    private struct SweepPagesError: Error { let detail: String }

    private static func report(_ t: Tally, counts: SweepCounts, seconds: Double) {
        let page = 4096.0
        let deleting = t.steps.filter { $0.devices > 0 }.map { Double($0.bytes) / page }
        let others = t.steps.filter { $0.devices == 0 }.map { Double($0.bytes) / page }
        let total = t.steps.reduce(0) { $0 + $1.bytes }
        print("sweep: \(counts.devices) devices, \(counts.pushToStartTokens) push-to-start and \(counts.activityTokens)"
              + " activity tokens, \(t.steps.count) steps, " + String(format: "%.1f s", seconds))
        print(String(format: "written: %.0f pages, %.2f pages per deleted device", Double(total) / page,
                     Double(total) / page / Double(max(1, counts.devices))))
        print("pages per step, steps that deleted devices: " + summary(deleting))
        print("pages per step, other steps: " + summary(others))
        let commits = t.steps.filter { $0.devices > 0 }.map { $0.commitSeconds * 1000 }
        print("commit ms (the machine's, not deterministic), steps that deleted devices: " + summary(commits, "%.2f"))
        print("commit ms, other steps: " + summary(t.steps.filter { $0.devices == 0 }.map { $0.commitSeconds * 1000 }, "%.2f"))
        for (kind, what) in [(0, "steps that deleted devices (\(t.sampledDevices) devices)"), (1, "other steps")]
        where t.sampled[kind] > 0 {
            let trees = t.byTree[kind].sorted { $0.value > $1.value }
                .map { String(format: "%@ %.1f", $0.key, Double($0.value) / Double(t.sampled[kind])) }
            print("sampled \(t.sampled[kind]) \(what), pages per step by tree: " + trees.joined(separator: ", "))
        }
    }

    private static func summary(_ values: [Double], _ number: String = "%.0f") -> String {
        guard !values.isEmpty else { return "none" }
        let sorted = values.sorted()
        func at(_ q: Double) -> Double { sorted[min(sorted.count - 1, Int(q * Double(sorted.count)))] }
        return String(format: "%d steps, mean %.1f, p50 \(number), p99 \(number), max \(number)", values.count,
                      values.reduce(0, +) / Double(values.count), at(0.5), at(0.99), sorted.last ?? 0)
    }

    /// Bytes this process has passed to write calls (`wchar` of `/proc/self/io`).
    private static func wchar() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/io", encoding: .utf8) else { return 0 }
        for line in text.split(separator: "\n") where line.hasPrefix("wchar:") {
            return Int(line.dropFirst(6).trimmingCharacters(in: .whitespaces)) ?? 0
        }
        return 0
    }
}

/// The re-registrations beside the sweep (`--upserters`): latencies by phase.
private final class Upserts: Sendable {
    let store: LMDBRegistryStore
    let options: SweepPagesOptions
    /// 0 before the sweep, 1 during it, 2 to stop.
    let phase = Atomic<Int>(0)
    private let latencies = Mutex<[[Double]]>([[], []])
    private let tasks = Mutex<Task<Void, any Error>?>(nil)

    init(store: LMDBRegistryStore, options: SweepPagesOptions) {
        self.store = store
        self.options = options
    }

    /// Starts the upserters and returns after `baseline` of them.
    func run(for baseline: Duration) async throws {
        guard options.upserters > 0 else { return }
        let task = Task { [self] in
            try await withThrowingTaskGroup(of: Void.self) { group in
                for worker in 0..<options.upserters {
                    group.addTask { try await self.loop(worker) }
                }
                try await group.waitForAll()
            }
        }
        tasks.withLock { $0 = task }
        try await Task.sleep(for: baseline)
    }

    private func loop(_ worker: Int) async throws {
        var generator = SystemRandomNumberGenerator()
        let live = options.devices / 2
        while true {
            let phase = phase.load(ordering: .relaxed)
            if phase == 2 { return }
            let k = 2 * Int.random(in: 0..<live, using: &generator) + 1
            let began = ContinuousClock.now
            _ = try await store.registerDevice(DeviceRegistration(
                userId: BenchDataSet.userId(k / 5), deviceId: "d\(k % 5)",
                pushToken: .set(BenchDataSet.token("a1", k)), sequence: nil))
            let ms = (ContinuousClock.now - began).inSeconds * 1000
            latencies.withLock { $0[phase].append(ms) }
        }
    }

    func finish() async throws {
        try await tasks.withLock { $0 }?.value
    }

    func report() {
        guard options.upserters > 0 else { return }
        let all = latencies.withLock { $0 }
        for (phase, name) in [(0, "before the sweep"), (1, "during the sweep")] {
            let sorted = all[phase].sorted()
            guard !sorted.isEmpty else { continue }
            func at(_ q: Double) -> Double { sorted[min(sorted.count - 1, Int(q * Double(sorted.count)))] }
            print(String(format: "upserts %@ (%d upserters): %d, p50 %.2f ms, p99 %.2f ms, max %.2f ms", name,
                         options.upserters, sorted.count, at(0.5), at(0.99), sorted.last ?? 0))
        }
    }
}
