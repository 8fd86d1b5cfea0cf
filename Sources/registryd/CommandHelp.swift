/// What `registryd SUBCOMMAND --help` prints, and the list of flags the
/// subcommand accepts (its parser is built from `flags`).
struct CommandHelp: Sendable {
    let name: String
    /// The arguments after `registryd NAME`, e.g. `--to DIR [--with-secrets]`.
    let synopsis: String
    /// One line for `registryd help`'s list.
    let tagline: String
    /// What the command does, wrapped by hand.
    let summary: String
    /// Names in `Flags.all`, in the order help lists them.
    let flags: [String]
    /// Shell lines, each followed (when useful) by what it prints.
    let example: String

    /// Usage, flags with their variables and defaults, and the example.
    var text: String {
        var lines = ["usage: registryd \(name) \(synopsis)", "", summary, "", "flags:"]
        for name in flags {
            guard let flag = Flags.named(name) else { continue }
            let head = "  --\(flag.name)" + (flag.value.map { " \($0)" } ?? "")
            lines.append(head)
            var detail = "      \(flag.summary)"
            if let value = flag.defaultValue { detail += " (default: \(value))" }
            lines.append(detail)
            if flag.readsEnvironment { lines.append("      env: \(Arguments.variableName(flag.name))") }
        }
        lines.append("  --help")
        lines.append("      print this help")
        lines += ["", "example:", example.split(separator: "\n", omittingEmptySubsequences: false)
            .map { "  " + $0 }.joined(separator: "\n")]
        return lines.joined(separator: "\n")
    }

    /// The parser for this command's command line and environment.
    func arguments(_ raw: [String]) throws(Arguments.Failure) -> Arguments {
        let known = flags.compactMap(Flags.named)
        do {
            return try Arguments(raw, valued: Set(known.filter { !$0.isSwitch }.map(\.name)),
                                 switches: Set(known.filter(\.isSwitch).map(\.name)),
                                 environmentFlags: Set(known.filter(\.readsEnvironment).map(\.name)))
        } catch {
            throw Arguments.Failure(description: "\(error.description); see 'registryd \(name) --help'")
        }
    }
}
