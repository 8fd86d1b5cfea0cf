/// The properties one fuzz input broke, collected rather than trapped on, so
/// the same harness serves two callers: the libFuzzer wrapper in
/// `tools/fuzz-targets/` traps on the first broken property (which is what
/// makes libFuzzer save the input), and `FuzzRegressionTests` reports each
/// one with `#expect` under `swift test`.
///
/// A trap inside product code is not collected: it ends the process in both
/// callers, which is exactly the finding.
struct FuzzCheck {
    private(set) var violations: [String] = []

    /// Records `message` when `condition` does not hold.
    mutating func expect(_ condition: Bool, _ message: @autoclosure () -> String) {
        if !condition { violations.append(message()) }
    }
}
