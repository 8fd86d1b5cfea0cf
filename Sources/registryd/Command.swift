import Foundation

/// A subcommand: its help (which also lists the flags it accepts) and its work.
protocol Subcommand: Sendable {
    static var help: CommandHelp { get }
    /// Returns the exit status; throws `Arguments.Failure` for a bad command
    /// line or value (exit 2, before anything is written).
    static func run(_ arguments: Arguments) throws -> Int32
}

/// The subcommands. A bad command line or value prints one line naming the
/// flag and pointing to `--help`, and exits 2 before anything is written;
/// `--help` prints the command's help to stdout and exits 0.
enum Command {
    /// In the order `registryd help` lists them; `serve` is the default.
    static let all: [any Subcommand.Type] = [
        ServeCommand.self, MintTokenCommand.self, StatsCommand.self, SweepCommand.self, BackupCommand.self,
        CheckCommand.self, ExportCommand.self, ImportCommand.self, RotateTokenKeyCommand.self,
    ]

    static func run(_ name: String, _ arguments: [String]) -> Int32 {
        if name == "help" {
            guard let topic = arguments.first else {
                print(usage)
                return 0
            }
            return run(topic, ["--help"])
        }
        guard let command = all.first(where: { $0.help.name == name }) else {
            printError("registryd: unknown subcommand '\(name)'; see 'registryd --help'")
            return 2
        }
        if Arguments.asksForHelp(arguments) {
            print(command.help.text)
            return 0
        }
        do {
            return try command.run(try command.help.arguments(arguments))
        } catch let failure as Arguments.Failure {
            printError("registryd \(name): \(failure.description)")
            return 2
        } catch {
            printError("registryd \(name): \(error)")
            return 1
        }
    }

    static func printError(_ line: String) {
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }

    /// `registryd help` and `registryd --help`.
    static var usage: String {
        var lines = ["usage: registryd [SUBCOMMAND] [FLAGS]", "",
                     "A push-notification device registry: the HTTP API of docs/api.md over an embedded LMDB store,",
                     "or a PostgreSQL database that many servers share (--store postgres).", "",
                     "subcommands:"]
        var width = 0
        for command in all { width = max(width, command.help.name.count) }
        for command in all {
            lines.append("  \(command.help.name.padding(toLength: width, withPad: " ", startingAt: 0))  \(command.help.tagline)")
        }
        lines += ["", "With no subcommand, registryd serves (`serve`).",
                  "Every setting flag also reads REGISTRY_<FLAG> (e.g. REGISTRY_DATA_DIR); a flag beats its variable.",
                  "'registryd SUBCOMMAND --help' lists a subcommand's flags with their defaults and an example;",
                  "'registryd --version' prints the release."]
        return lines.joined(separator: "\n")
    }
}
