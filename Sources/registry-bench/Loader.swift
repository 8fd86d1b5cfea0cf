import Codecs
import TokenSealing
import Foundation
import RegistryCore
import RegistryPostgres
import RegistryLMDB
import Synchronization

/// `registry-bench load`: writes a deterministic data set straight through
/// the store (`importRecords`, the path `registryd import` takes) into an
/// LMDB environment directory, or with `--postgres-url` into a PostgreSQL
/// database (`PostgresRegistryStore.importRecords`: at most 500 records per
/// REPEATABLE READ transaction, the path `registryd import --store postgres`
/// takes), so `tools/bench` can preload millions of devices without going
/// through HTTP. Run it with no server on an LMDB directory (LMDB allows one
/// writer; it would only wait).
///
/// With `--postgres-url`, `--dir DIR` names the registryd data directory
/// whose `secrets/token-keys` the tokens are sealed with (generated when
/// absent; give the server the same file); nothing else is written there.
///
/// The data set (`BenchDataSet`) is what the wrk scripts in
/// `tools/bench-scripts/` address by index, so both must agree:
///
/// - device `k` (0 ≤ k < N) belongs to user `k / perUser` and has
///   deviceId `d<k % perUser>`; user `i` is `u` + `i` zero-padded to 8 digits;
/// - every device has a push token, a push-to-start token and one activity
///   token in activity `live-<k / perActivity>` (100 devices per activity);
///   devices `k = i * (N / big)` (i < big) also hold a token in activity `big`;
/// - tokens are 64 hex digits: a two-digit kind prefix (`a1` push, `b2`
///   push-to-start, `c3` live activity, `d4` big activity), zeros, and `k`
///   as 16 hex digits;
/// - `lastSeenAt` (and every token's time) lies within the last 30 days, or,
///   for an expired device (`k % expireEvery == 0` when `expireEvery` > 0),
///   1–31 days beyond `expiredAgeSeconds`; it grows with `k` (device 0 seen
///   longest ago), so expiry entries, like device keys, are written in
///   order; `sequence` is `lastSeenAt` in ms.
///
/// Speed: records go in chunks of `--chunk` (500) devices (one writer command each), submitted
/// by `parallel` tasks at once, so one group commit (one fsync) carries up
/// to `parallel` × 500 devices; chunks are handed out in key order, so every
/// database but the token-owner index (keyed by SHA-256 of the token, so
/// written at random) fills by appending. On PostgreSQL a chunk is one
/// transaction, `--postgres-pool-size` (default 4) of them at once.
struct LoadOptions {
    var directory = ""
    var postgresURL = ""
    var postgresPoolSize = 4
    var devices = 100_000
    var perUser = 5
    var perActivity = 100
    var bigActivityTokens = 10_000
    var expireEvery = 0
    var expiredAgeSeconds: Int64 = 90 * 86_400
    var parallel = 128
    var chunk = 500

    static let usage = """
        usage: registry-bench load --dir DIR [--devices N] [--per-user N] [--per-activity N]
                                   [--big-activity-tokens N] [--expire-every M] [--expired-age SECONDS] [--parallel N]
                                   [--chunk N] [--postgres-url URL [--postgres-pool-size N]]
          --dir DIR: the LMDB environment (DIR/lmdb of a data directory); with --postgres-url, the
                     data directory whose secrets/token-keys seals the tokens
        """

    init?(_ arguments: [String]) {
        var rest = arguments[...]
        while let flag = rest.popFirst() {
            guard let value = rest.popFirst() else { return nil }
            if flag == "--dir" {
                directory = value
                continue
            }
            if flag == "--postgres-url" {
                postgresURL = value
                continue
            }
            guard let number = Int(value), number >= 0 else { return nil }
            switch flag {
            case "--devices": devices = number
            case "--per-user": perUser = number
            case "--per-activity": perActivity = number
            case "--big-activity-tokens": bigActivityTokens = number
            case "--expire-every": expireEvery = number
            case "--expired-age": expiredAgeSeconds = Int64(number)
            case "--parallel": parallel = number
            case "--postgres-pool-size": postgresPoolSize = number
            case "--chunk": chunk = number
            default: return nil
            }
        }
        guard !directory.isEmpty, devices > 0, perUser > 0, perActivity > 0, parallel > 0, postgresPoolSize > 0, chunk > 0,
              bigActivityTokens <= devices else { return nil }
    }
}

/// The deterministic records of the benchmark data set (see `LoadOptions`).
struct BenchDataSet: Sendable {
    let devices: Int
    let perUser: Int
    let perActivity: Int
    let bigActivityTokens: Int
    let bigStride: Int
    let expireEvery: Int
    let expiredAgeSeconds: Int64
    let now: Int64

    init(_ options: LoadOptions, nowMilliseconds: Int64) {
        devices = options.devices
        perUser = options.perUser
        perActivity = options.perActivity
        bigActivityTokens = options.bigActivityTokens
        bigStride = options.bigActivityTokens > 0 ? max(1, options.devices / options.bigActivityTokens) : 0
        expireEvery = options.expireEvery
        expiredAgeSeconds = options.expiredAgeSeconds
        now = nowMilliseconds
    }

    var users: Int { (devices + perUser - 1) / perUser }

    static func userId(_ i: Int) -> String {
        let digits = String(i)
        return "u" + String(repeating: "0", count: max(0, 8 - digits.count)) + digits
    }

    /// 64 hex digits: `prefix` (two digits), zeros, `k` in hex.
    static func token(_ prefix: String, _ k: Int) -> String {
        var bytes = [UInt8](repeating: UInt8(ascii: "0"), count: 64)
        for (i, byte) in prefix.utf8.prefix(2).enumerated() { bytes[i] = byte }
        var value = UInt64(k), index = 63
        let digits = Array("0123456789abcdef".utf8)
        while value > 0 && index >= 2 {
            bytes[index] = digits[Int(value & 15)]
            value >>= 4
            index -= 1
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    func isExpired(_ k: Int) -> Bool { expireEvery > 0 && k % expireEvery == 0 }

    func holdsBigToken(_ k: Int) -> Bool {
        bigStride > 0 && k % bigStride == 0 && k / bigStride < bigActivityTokens
    }

    /// Ages spread evenly over 30 days, device 0 the oldest, in ms.
    private func spread(_ k: Int) -> Int64 {
        Int64((Double(devices - k) / Double(max(1, devices))) * Double(30 * 86_400_000))
    }

    func lastSeen(_ k: Int) -> Timestamp {
        var age = spread(k)
        if isExpired(k) { age += (expiredAgeSeconds + 86_400) * 1000 }
        return Timestamp(milliseconds: now - age)
    }

    func record(_ k: Int) -> ExportedRecord {
        let user = Self.userId(k / perUser), deviceId = "d\(k % perUser)"
        let seen = lastSeen(k)
        var activityTokens = [ActivityToken(activityId: "live-\(k / perActivity)", userId: user, deviceId: deviceId,
                                            token: Self.token("c3", k), environment: .production, lastSeenAt: seen)]
        if holdsBigToken(k) {
            activityTokens.append(ActivityToken(activityId: "big", userId: user, deviceId: deviceId,
                                                token: Self.token("d4", k), environment: .production, lastSeenAt: seen))
        }
        let device = DeviceRecord(
            userId: user, deviceId: deviceId, platform: .apns, environment: .production,
            osVersion: "18.2", appVersion: "2.1.0",
            pushToken: StoredToken(token: Self.token("a1", k), environment: .production, updatedAt: seen),
            pushToStartToken: StoredToken(token: Self.token("b2", k), environment: .production, updatedAt: seen),
            activityCount: activityTokens.count,
            createdAt: Timestamp(milliseconds: max(0, seen.milliseconds - 60 * 86_400_000)),
            lastSeenAt: seen, sequence: UInt64(seen.milliseconds))
        return .device(device, activityTokens: activityTokens)
    }
}

enum Loader {

    static func run(_ options: LoadOptions) async {
        let data = BenchDataSet(options, nowMilliseconds: Int64(Date().timeIntervalSince1970 * 1000))
        let batches = Mutex((count: 0, commands: 0))
        let started = ContinuousClock.now
        let chunkSize = options.chunk
        do {
            let store: any RegistryMaintenance
            if options.postgresURL.isEmpty {
                var configuration = LMDBRegistryStore.Configuration(
                    directory: options.directory, tokenKeys: try BenchKeys.ring(forEnvironment: options.directory))
                // Start the map near its final size: every growth re-runs a whole batch.
                configuration.initialMapSize = max(64 << 20, min(options.devices * 1_500, 1 << 38))
                configuration.maxBatchSize = 1_000
                configuration.onCommit = { report in batches.withLock { $0.count += 1; $0.commands += report.commands } }
                store = try LMDBRegistryStore(configuration: configuration)
            } else {
                var configuration = PostgresRegistryStore.Configuration(
                    connectionString: options.postgresURL,
                    tokenKeys: try BenchKeys.ring(forDataDirectory: options.directory))
                configuration.poolSize = options.postgresPoolSize
                store = try PostgresRegistryStore(configuration: configuration)
            }
            let chunks = (options.devices + chunkSize - 1) / chunkSize
            let next = Counter(), done = Counter(), retried = Counter()
            let reportEvery = max(1, chunks / 20)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<min(options.parallel, chunks) {
                    group.addTask {
                        while true {
                            let chunk = next.increment() - 1
                            guard chunk < chunks else { return }
                            let range = (chunk * chunkSize)..<min((chunk + 1) * chunkSize, options.devices)
                            let records = range.map { data.record($0) }
                            // A PostgreSQL transaction the server cancelled (serialization failure after
                            // the pool's own retries) is run again: importing the same records twice
                            // changes nothing.
                            var attempt = 1
                            while true {
                                do {
                                    _ = try await store.importRecords(records)
                                    break
                                } catch RegistryError.unavailable(let reason)
                                            where !options.postgresURL.isEmpty && attempt < 5 {
                                    attempt += 1
                                    _ = retried.increment()
                                    say("load: chunk \(chunk) again (attempt \(attempt)): \(reason)")
                                    try await Task.sleep(for: .milliseconds(100 * attempt))
                                }
                            }
                            let finished = done.increment()
                            if finished % reportEvery == 0 || finished == chunks {
                                let seconds = (ContinuousClock.now - started).inSeconds
                                let loaded = min(finished * chunkSize, options.devices)
                                say(String(format: "load: %d of %d devices, %.1f s, %.0f devices/s",
                                           loaded, options.devices, seconds, Double(loaded) / seconds))
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
            let stats = try await store.stats()
            store.shutdown()
            let seconds = (ContinuousClock.now - started).inSeconds
            // LMDB: group commits counted as they happen. PostgreSQL: a transaction (one commit) per
            // 500 records of a chunk (ImportBatches), retries not counted.
            let count: Int, perCommit: Double
            if options.postgresURL.isEmpty {
                let (batchCount, commands) = batches.withLock { ($0.count, $0.commands) }
                (count, perCommit) = (batchCount, Double(commands * chunkSize) / Double(max(1, batchCount)))
            } else {
                count = chunks * ((chunkSize + 499) / 500)
                perCommit = Double(options.devices) / Double(max(1, count))
            }
            let expired = options.expireEvery > 0 ? (options.devices + options.expireEvery - 1) / options.expireEvery : 0
            // One machine-readable line for tools/bench.
            print("loaded devices=\(stats.devices) users=\(data.users) pushToStartTokens=\(stats.pushToStartTokens)"
                  + " activityTokens=\(stats.activityTokens) expired=\(expired) usedBytes=\(stats.usedBytes)"
                  + String(format: " seconds=%.2f devicesPerSecond=%.0f", seconds, Double(options.devices) / seconds)
                  + " commits=\(count)" + String(format: " devicesPerCommit=%.0f", perCommit) + " retries=\(retried.current)")
        } catch {
            FileHandle.standardError.write(Data("registry-bench load failed: \(error)\n".utf8))
            exit(1)
        }
    }

    private static func say(_ line: String) {
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }
}

/// A shared counter for the loader's tasks.
final class Counter: Sendable {
    private let value = Mutex(0)

    /// Adds one; returns the new value.
    func increment() -> Int { value.withLock { $0 += 1; return $0 } }

    var current: Int { value.withLock { $0 } }
}
