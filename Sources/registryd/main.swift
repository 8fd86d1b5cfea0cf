import Foundation

// registryd [serve|mint-token|stats|sweep|backup] [flags]; `serve` is the default.
let arguments = Array(CommandLine.arguments.dropFirst())
let subcommand = arguments.first.flatMap { $0.hasPrefix("-") ? nil : $0 } ?? "serve"
let rest = arguments.first == subcommand ? Array(arguments.dropFirst()) : arguments
exit(Command.run(subcommand, rest))
