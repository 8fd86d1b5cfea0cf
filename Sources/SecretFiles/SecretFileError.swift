import Glibc

/// Why a secret file was refused; `description` names the file, and for a
/// file others may access, the command that mends it.
public struct SecretFileError: Error, Equatable, CustomStringConvertible {
    public enum Kind: Equatable, Sendable {
        case missing
        /// With the system's reason.
        case unreadable(String)
        case notRegularFile
        case tooLarge(maximumBytes: Int)
        /// Its permission bits (`mode & 0777`): some for group or others.
        case openToGroupOrOthers(mode: mode_t)
    }

    public let path: String
    public let kind: Kind

    init(_ path: String, _ kind: Kind) {
        self.path = path
        self.kind = kind
    }

    /// `chmod 600 PATH`, quoted for a shell when the path needs it: what
    /// closes the file to group and others.
    public var remedy: String { "chmod 600 " + Self.shellQuoted(path) }

    public var description: String {
        switch kind {
        case .missing: "cannot read \(path): it does not exist"
        case .unreadable(let reason): "cannot read \(path): \(reason)"
        case .notRegularFile: "\(path) is not a regular file"
        case .tooLarge(let maximumBytes): "\(path) is larger than \(maximumBytes) bytes"
        case .openToGroupOrOthers(let mode):
            "\(path) is open to group or others (mode \(String(mode, radix: 8))); a secret file must be private to its owner: run \(remedy)"
        }
    }

    /// `text` as one shell word: unchanged when it holds only characters a
    /// shell leaves alone, else in single quotes.
    private static func shellQuoted(_ text: String) -> String {
        let plain = !text.isEmpty && text.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte | 0x20 >= 0x61 && byte | 0x20 <= 0x7A) || "/._-+,:@%=".utf8.contains(byte)
        }
        return plain ? text : "'" + text.map { $0 == "'" ? #"'\''"# : String($0) }.joined() + "'"
    }
}
