import Foundation

// registry-bench [--submitters N] [--upserts M]   group commit vs one commit per upsert
// registry-bench crash-writer DIR N               N durable upserts, a line on stdout, then SIGKILL
// registry-bench grow-under-limit DIR MIB         writes until the map cannot grow under RLIMIT_AS
// registry-bench load --dir DIR [--devices N] ...  the deterministic data set of tools/bench, through the store
// registry-bench mint-jwts --users N --out-dir DIR  HS256/RS256/ES256 device JWTs and a JWKS for tools/bench
// registry-bench sweep-pages --dir DIR [--sample-every N]  one sweep: pages its commits write, by database
let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.first == "load" {
    guard let options = LoadOptions(Array(arguments.dropFirst())) else {
        FileHandle.standardError.write(Data((LoadOptions.usage + "\n").utf8))
        exit(2)
    }
    await Loader.run(options)
} else if arguments.first == "sweep-pages" {
    guard let options = SweepPagesOptions(Array(arguments.dropFirst())) else {
        FileHandle.standardError.write(Data((SweepPagesOptions.usage + "\n").utf8))
        exit(2)
    }
    await SweepPages.run(options)
} else if arguments.first == "mint-jwts" {
    guard let options = MintOptions(Array(arguments.dropFirst())) else {
        FileHandle.standardError.write(Data((MintOptions.usage + "\n").utf8))
        exit(2)
    }
    JWTMinter.run(options)
} else if arguments.first == "grow-under-limit" {
    guard arguments.count == 3, let headroom = Int(arguments[2]), headroom > 0 else {
        FileHandle.standardError.write(Data("usage: registry-bench grow-under-limit DIR MIB\n".utf8))
        exit(2)
    }
    await GrowthLimitProbe.run(directory: arguments[1], headroomMiB: headroom)
} else if arguments.first == "crash-writer" {
    guard arguments.count == 3, let count = Int(arguments[2]), count > 0 else {
        FileHandle.standardError.write(Data("usage: registry-bench crash-writer DIR N\n".utf8))
        exit(2)
    }
    await CrashWriter.run(directory: arguments[1], count: count)
} else {
    guard let options = BenchmarkOptions(arguments) else {
        FileHandle.standardError.write(Data("usage: registry-bench [--submitters N] [--upserts M]\n".utf8))
        exit(2)
    }
    await Benchmark(options: options).run()
}
