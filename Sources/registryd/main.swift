import Foundation

// registryd [serve|mint-token|stats|sweep|backup|check|export|import] [flags]; `serve` is the default.
let arguments = Array(CommandLine.arguments.dropFirst())
let subcommand: String
switch arguments.first {
case "--help", "-h": subcommand = "help"
case let first? where !first.hasPrefix("-"): subcommand = first
default: subcommand = "serve"
}
let rest = arguments.first == subcommand ? Array(arguments.dropFirst()) : arguments
exit(Command.run(subcommand, rest))
