import Foundation

/// A subcommand's flags and the `REGISTRY_*` environment, resolved the way
/// docs/configuration.md says: a flag beats its environment variable. Flags are
/// `--name value` or `--name=value`; switches (`--json`) take no value.
struct Arguments {
    /// A bad command line or value: printed as one line, exit status 2.
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    private var values: [String: String] = [:]
    /// Every value of each flag, in order (a repeatable flag such as `--apns-topic`).
    private var allValues: [String: [String]] = [:]
    private var switches: Set<String> = []
    private let environment: [String: String]
    /// Flags whose `REGISTRY_*` variable is read (settings, not per-run flags like `--to`).
    private let environmentFlags: Set<String>

    /// - Parameters:
    ///   - valued: flags that take a value, without the leading `--`.
    ///   - switches: flags that take none.
    ///   - environmentFlags: flags that also read their `REGISTRY_*` variable.
    init(_ arguments: [String], valued: Set<String>, switches allowedSwitches: Set<String> = [],
         environmentFlags: Set<String>,
         environment: [String: String] = ProcessInfo.processInfo.environment) throws(Failure) {
        self.environment = environment
        self.environmentFlags = environmentFlags
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            guard argument.hasPrefix("--"), argument.count > 2 else {
                throw Failure(description: "unexpected argument '\(argument)'")
            }
            var name = String(argument.dropFirst(2))
            var inlineValue: String?
            if let equals = name.firstIndex(of: "=") {
                inlineValue = String(name[name.index(after: equals)...])
                name = String(name[..<equals])
            }
            if allowedSwitches.contains(name) {
                guard inlineValue == nil else { throw Failure(description: "--\(name) takes no value") }
                switches.insert(name)
            } else if valued.contains(name) {
                if let inlineValue {
                    values[name] = inlineValue
                } else {
                    guard index < arguments.count else { throw Failure(description: "--\(name) needs a value") }
                    values[name] = arguments[index]
                    index += 1
                }
                allValues[name, default: []].append(values[name]!)
            } else if let replacement = Self.removedFlags[name] {
                throw Failure(description: "--\(name) was removed: \(replacement)")
            } else {
                throw Failure(description: "unknown flag --\(name)")
            }
        }
    }

    /// The flag's value, else its `REGISTRY_*` variable's, else `nil`; with
    /// the name to blame when the value is bad.
    func value(_ flag: String) -> (value: String, source: String)? {
        if let value = values[flag] { return (value, "--\(flag)") }
        guard environmentFlags.contains(flag) else { return nil }
        let variable = Self.variableName(flag)
        if let value = environment[variable] { return (value, "--\(flag) (from \(variable))") }
        return nil
    }

    /// Every value of a repeatable flag; without the flag, its `REGISTRY_*`
    /// variable's comma-separated values; `nil` when neither is given.
    func values(_ flag: String) -> (values: [String], source: String)? {
        if let given = allValues[flag] { return (given, "--\(flag)") }
        guard environmentFlags.contains(flag) else { return nil }
        let variable = Self.variableName(flag)
        guard let value = environment[variable] else { return nil }
        return (value.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }, "--\(flag) (from \(variable))")
    }

    func isSet(_ flag: String) -> Bool { switches.contains(flag) }

    /// Flags an earlier version took, with what replaces them: named in the
    /// refusal, so an upgrade that keeps an old command line says what to do.
    static let removedFlags = [
        "max-apps": "apps are declared by the operator with --apps ID[,ID...] (REGISTRY_APPS); a caller can no longer create one",
    ]

    /// A removed flag's `REGISTRY_*` variable, when the environment still
    /// sets it (an old environment file), with the refusal to print.
    func removedVariable(_ flag: String) -> Failure? {
        let variable = Self.variableName(flag)
        guard environment[variable] != nil, let replacement = Self.removedFlags[flag] else { return nil }
        return Failure(description: "\(variable) is no longer read (--\(flag) was removed): \(replacement)")
    }

    /// Whether the command line asks for help (`--help` or `-h` anywhere).
    static func asksForHelp(_ arguments: [String]) -> Bool {
        arguments.contains("--help") || arguments.contains("-h")
    }

    /// `--jwt-hs256-secret-file` → `REGISTRY_JWT_HS256_SECRET_FILE`.
    static func variableName(_ flag: String) -> String {
        pluralVariables[flag] ?? "REGISTRY_" + flag.uppercased().replacingOccurrences(of: "-", with: "_")
    }

    /// Repeatable flags whose variable is named in the plural (it holds a list).
    private static let pluralVariables = ["fcm-service-account": "REGISTRY_FCM_SERVICE_ACCOUNTS"]
}
