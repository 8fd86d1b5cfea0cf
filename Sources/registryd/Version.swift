/// The release `registryd --version` prints and the `listening` log line
/// carries: the HTTP contract it serves (docs/api.md) is the same minor
/// version.
enum Version {
    static let current = "1.4.0"
}
