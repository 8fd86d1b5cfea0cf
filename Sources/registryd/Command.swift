import Foundation

/// The subcommands. Each returns the process exit status; a bad command line
/// or value prints one line naming the flag and exits 2 before anything is
/// written.
enum Command {
    static func run(_ name: String, _ arguments: [String]) -> Int32 {
        do {
            switch name {
            case "serve": return try ServeCommand.run(arguments)
            case "mint-token": return try MintTokenCommand.run(arguments)
            case "stats": return try StatsCommand.run(arguments)
            case "sweep": return try SweepCommand.run(arguments)
            case "backup": return try BackupCommand.run(arguments)
            case "check": return try CheckCommand.run(arguments)
            case "export": return try ExportCommand.run(arguments)
            case "import": return try ImportCommand.run(arguments)
            case "help":
                print(usage)
                return 0
            default:
                throw Arguments.Failure(description: "unknown subcommand '\(name)'")
            }
        } catch let failure as Arguments.Failure {
            printError("registryd \(name): \(failure.description)")
            return 2
        } catch {
            printError("registryd \(name): \(error)")
            return 1
        }
    }

    private static func printError(_ line: String) {
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }

    static let usage = """
        usage: registryd [serve] [--data-dir DIR] [--listen HOST:PORT] [--jwt-hs256-secret-file F]
                         [--jwt-jwks-file F] [--jwt-issuer S] [--jwt-audience S] [--internal-api-key-file F]
                         [--device-ttl D] [--activity-ttl D] [--sweep-interval D] [--max-devices-per-user N]
                         [--max-activities-per-device N] [--log-level debug|info|warning|error]
                         [--max-connections N] [--max-connections-per-address N] [--header-timeout D] [--body-timeout D]
               registryd mint-token --user U [--ttl D] [--data-dir DIR] [--jwt-hs256-secret-file F]
               registryd stats --json [--data-dir DIR]
               registryd sweep [--dry-run] [--data-dir DIR] [--device-ttl D] [--activity-ttl D]
               registryd backup --to DIR [--data-dir DIR]
               registryd check [--repair] [--data-dir DIR]
               registryd export [--data-dir DIR] > records.jsonl
               registryd import [--from FILE] [--data-dir DIR]
        Every flag also reads REGISTRY_<FLAG> (e.g. REGISTRY_DATA_DIR); a flag beats its variable.
        """
}
