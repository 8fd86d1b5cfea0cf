import Foundation

// Before anything else, for every subcommand: a core dump would hold the secrets (CoreDumps.swift).
do {
    try CoreDumps.forbid()
} catch {
    Command.printError("registryd: \(error)")
    exit(1)
}

// registryd [SUBCOMMAND] [FLAGS]; `serve` is the default (`registryd --help` lists them).
let arguments = Array(CommandLine.arguments.dropFirst())
let subcommand: String
switch arguments.first {
case "--version":
    print("registryd \(Version.current)")
    exit(0)
case "--help", "-h": subcommand = "help"
case let first? where !first.hasPrefix("-"): subcommand = first
default: subcommand = "serve"
}
let rest = arguments.first == subcommand || subcommand == "help" ? Array(arguments.dropFirst()) : arguments
exit(Command.run(subcommand, rest))
