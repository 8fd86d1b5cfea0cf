import Codecs
import Glibc
import SecretFiles

/// The file that holds a `TokenKeyRing` (`DIR/secrets/token-keys` or
/// `--token-key-file`): a few lines of text,
///
///     # comments and blank lines are ignored
///     registryd-token-keys 1
///     index <64 hex digits>
///     seal 1 <64 hex digits>
///     seal 2 <64 hex digits> current
///     end
///
/// The first line that is not a comment names the format and its version;
/// `index` appears once; each `seal` line is an id (0-255) and a key, and
/// exactly one, the highest id, is marked `current`; `end` closes the file,
/// so a file cut off at a line boundary is refused rather than read as a
/// ring with keys missing. Fields are separated by spaces or tabs. Anything
/// else is refused with the path and the line number.
///
/// **Never regenerated over an existing file.** Every stored token is sealed
/// under these keys; a new ring would make all of them unreadable. A file
/// that exists but cannot be read or parsed is an error for the operator
/// (restore it from a backup), never a reason to generate a new one.
///
/// **Permissions: a file group or others can access is refused** (like ssh
/// with a private key), because anyone who can read it can read every
/// token. A deployment whose secret store cannot set 0600 (a mounted secret
/// volume with a fixed mode) passes `allowGroupOrOtherAccess: true`, and
/// should log that it did. Files written here are 0600, and a directory
/// created for them 0700.
///
/// **Writes are atomic**: a temporary file in the same directory, fsynced,
/// then renamed over the old file (or, for a first start, linked into place
/// so a file another process made meanwhile is never replaced), and the
/// directory fsynced. A reader sees the old ring or the new one, never half;
/// a crash may leave a `.<name>.tmp-…` file (mode 0600) behind.
public enum TokenKeyFile {
    /// The first line of the format this build reads and writes.
    public static let formatName = "registryd-token-keys"
    public static let formatVersion = 1
    /// A larger file is refused unread: 256 keys take under 20 KB.
    static let maximumBytes = 64 * 1024

    /// The ring in `path`. Throws for a file that cannot be read, is not a
    /// regular file, is accessible by group or others (unless allowed), or
    /// does not parse.
    public static func load(path: String, allowGroupOrOtherAccess: Bool = false) throws(TokenKeyFileError) -> TokenKeyRing {
        let bytes = try read(path: path, allowGroupOrOtherAccess: allowGroupOrOtherAccess)
        return try parse(bytes, path: path)
    }

    /// Writes `ring` to `path` atomically (mode 0600, the directory created
    /// 0700 when missing), replacing any file there. During a rotation, write
    /// the new ring before sealing anything with its new key.
    public static func write(_ ring: TokenKeyRing, to path: String) throws(TokenKeyFileError) {
        let (directory, temporary) = try prepareTemporary(for: path, contents: render(ring))
        defer { unlink(temporary) }
        guard rename(temporary, path) == 0 else { throw .init(.unwritable, path, "cannot rename the new file into place: \(lastError())") }
        try syncDirectory(directory, for: path)
    }

    /// Replaces the existing key file at `path` with `ring` (atomically),
    /// keeping the old file's owner, group and mode: the server that reads
    /// it (a dedicated user, e.g. systemd's `DynamicUser`) must still be
    /// able to read the new file when an operator writes it as root. A
    /// caller that could not give the new file that owner (neither root nor
    /// the owner) is refused, naming the owner to run as, before anything
    /// is written. Throws `.missing` when there is no file to replace.
    public static func replace(_ ring: TokenKeyRing, at path: String) throws(TokenKeyFileError) {
        var status = stat()
        guard stat(path, &status) == 0 else {
            throw .init(errno == ENOENT ? .missing : .unreadable, path, "cannot stat: \(lastError())")
        }
        let me = geteuid()
        guard me == 0 || me == status.st_uid else {
            throw .init(.unwritable, path, "the file is owned by \(userName(status.st_uid)); written by \(userName(me)), "
                                           + "its server could no longer read it: run as \(userName(status.st_uid)) or as root")
        }
        let (directory, temporary) = try prepareTemporary(for: path, contents: render(ring), mode: status.st_mode & 0o777,
                                                          owner: (status.st_uid, status.st_gid))
        defer { unlink(temporary) }
        guard rename(temporary, path) == 0 else { throw .init(.unwritable, path, "cannot rename the new file into place: \(lastError())") }
        try syncDirectory(directory, for: path)
    }

    /// "user NAME (uid N)", or "uid N" when the name is unknown.
    private static func userName(_ uid: uid_t) -> String {
        guard let entry = getpwuid(uid), let name = entry.pointee.pw_name else { return "uid \(uid)" }
        return "user \(String(cString: name)) (uid \(uid))"
    }

    /// The ring in `path`, or on a first start (no file) a generated one
    /// (`TokenKeyRing.generate()`) written there; `created` tells which, so
    /// the caller can log it. A file that exists is only ever read: if it is
    /// damaged, this throws.
    public static func loadOrGenerate(path: String) throws(TokenKeyFileError) -> (ring: TokenKeyRing, created: Bool) {
        do {
            return (try load(path: path), false)
        } catch let error where error.kind == .missing {
            // No file: generate below.
        }
        let ring: TokenKeyRing
        do {
            ring = try TokenKeyRing.generate()
        } catch {
            throw .init(.unwritable, path, "cannot generate keys: \(error)")
        }
        let (directory, temporary) = try prepareTemporary(for: path, contents: render(ring))
        defer { unlink(temporary) }
        guard link(temporary, path) == 0 else {
            // Another process generated it first: use theirs.
            if errno == EEXIST { return (try load(path: path), false) }
            throw .init(.unwritable, path, "cannot create: \(lastError())")
        }
        try syncDirectory(directory, for: path)
        return (ring, true)
    }

    // MARK: - Text

    /// The file's text for `ring`.
    static func render(_ ring: TokenKeyRing) -> String {
        var text = """
            # registryd token keys. Every stored token is sealed under these keys: without
            # this file none can be read (keep it with backups, but apart from the data
            # directory's: a backup without it discloses no token). Mode 0600.
            # The index key never changes; "registryd rotate-token-key" adds sealing keys.
            \(formatName) \(formatVersion)
            index \(Hex.encode(ring.indexKey))

            """
        for key in ring.sealingKeys {
            text += "seal \(key.id) \(Hex.encode(key.bytes))\(key.id == ring.currentKeyID ? " current" : "")\n"
        }
        text += "end\n"
        return text
    }

    /// The ring `bytes` spell; errors name `path` and the line.
    static func parse(_ bytes: [UInt8], path: String) throws(TokenKeyFileError) -> TokenKeyRing {
        func malformed(_ line: Int?, _ detail: String) -> TokenKeyFileError { .init(.malformed, path, line: line, detail) }

        var sawHeader = false
        var sawEnd = false
        var index: (key: [UInt8], line: Int)?
        var sealing: [(key: TokenKeyRing.SealingKey, line: Int)] = []
        var current: (id: UInt8, line: Int)?
        var lineNumber = 0
        for line in bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            lineNumber += 1
            if let bad = line.first(where: { $0 >= 0x80 || ($0 < 0x20 && $0 != 0x09 && $0 != 0x0D) }) {
                throw malformed(lineNumber, "byte 0x\(Hex.encode([bad])) is not text")
            }
            let fields = line.split(whereSeparator: { $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }).map {
                String(decoding: $0, as: UTF8.self)
            }
            guard let keyword = fields.first, !keyword.hasPrefix("#") else { continue }
            if sawEnd { throw malformed(lineNumber, "text after \"end\"") }
            guard sawHeader else {
                guard fields.count == 2, keyword == formatName else {
                    throw malformed(lineNumber, "not a token key file: the first line must be \"\(formatName) \(formatVersion)\"")
                }
                guard fields[1] == String(formatVersion) else {
                    throw malformed(lineNumber, "format version \(fields[1]); this build reads \(formatVersion)")
                }
                sawHeader = true
                continue
            }
            switch keyword {
            case "index":
                guard fields.count == 2 else { throw malformed(lineNumber, "expected \"index <64 hex digits>\"") }
                guard index == nil else { throw malformed(lineNumber, "a second index key") }
                index = (try key(fields[1], line: lineNumber, path: path), lineNumber)
            case "seal":
                guard fields.count == 3 || (fields.count == 4 && fields[3] == "current") else {
                    throw malformed(lineNumber, "expected \"seal <id> <64 hex digits> [current]\"")
                }
                guard fields[1].utf8.count <= 3, fields[1].utf8.allSatisfy({ (0x30...0x39).contains($0) }),
                      let id = UInt8(fields[1]) else {
                    throw malformed(lineNumber, "key id \"\(fields[1])\" is not a number from 0 to 255")
                }
                if let first = sealing.first(where: { $0.key.id == id }) {
                    throw malformed(lineNumber, "key id \(id) again (first on line \(first.line))")
                }
                let bytes = try key(fields[2], line: lineNumber, path: path)
                guard let sealingKey = try? TokenKeyRing.SealingKey(id: id, bytes: bytes) else {
                    throw malformed(lineNumber, "sealing key \(id) is not 32 bytes")
                }
                sealing.append((sealingKey, lineNumber))
                if fields.count == 4 {
                    if let other = current { throw malformed(lineNumber, "a second current key (the first on line \(other.line))") }
                    current = (id, lineNumber)
                }
            case "end":
                guard fields.count == 1 else { throw malformed(lineNumber, "expected \"end\" alone") }
                sawEnd = true
            default:
                throw malformed(lineNumber, "unknown entry \"\(keyword)\" (expected index, seal or end)")
            }
        }
        guard sawHeader else { throw malformed(nil, bytes.isEmpty ? "the file is empty" : "the file holds only comments") }
        guard sawEnd else { throw malformed(nil, "no \"end\" line: the file is cut short") }
        guard let index else { throw malformed(nil, "no index key") }
        guard !sealing.isEmpty else { throw malformed(nil, "no sealing key") }
        guard let current else { throw malformed(nil, "no sealing key is marked current") }
        do {
            return try TokenKeyRing(indexKey: index.key, sealingKeys: sealing.map(\.key), currentKeyID: current.id)
        } catch {
            // The remaining checks concern one line each.
            let line: Int? = switch error {
            case .currentKeyNotNewest: current.line
            case let .indexKeyIsASealingKey(id): sealing.first { $0.key.id == id }?.line
            default: nil
            }
            throw malformed(line, error.description)
        }
    }

    /// 64 hex digits as 32 bytes.
    private static func key(_ text: String, line: Int, path: String) throws(TokenKeyFileError) -> [UInt8] {
        guard let bytes = Hex.decode(text) else {
            throw .init(.malformed, path, line: line, "the key is not hex digits (\(text.utf8.count) characters)")
        }
        guard bytes.count == TokenKeyRing.keyLength else {
            throw .init(.malformed, path, line: line,
                        "the key is \(text.utf8.count) hex digits; it must be \(TokenKeyRing.keyLength * 2)")
        }
        return bytes
    }

    // MARK: - Files

    /// The file's bytes: `SecretFile`'s rule (a regular file of sane size,
    /// closed to group and others unless allowed) in this file's errors.
    private static func read(path: String, allowGroupOrOtherAccess: Bool) throws(TokenKeyFileError) -> [UInt8] {
        do {
            return try SecretFile.read(path, maximumBytes: maximumBytes, allowingGroupOrOtherAccess: allowGroupOrOtherAccess)
        } catch {
            switch error.kind {
            case .missing: throw .init(.missing, path, "cannot open: \(String(cString: strerror(ENOENT)))")
            case .unreadable(let reason): throw .init(.unreadable, path, "cannot read: \(reason)")
            case .notRegularFile: throw .init(.unreadable, path, "not a regular file")
            case .tooLarge: throw .init(.unreadable, path, "more than \(maximumBytes) bytes; a token key file is at most that")
            case .openToGroupOrOthers(let mode):
                throw .init(.tooOpen, path, "mode \(String(mode, radix: 8)) lets group or others access it; "
                                            + "anyone who can read it can read every token: run \(error.remedy)")
            }
        }
    }

    /// Creates the directory of `path` (0700) when missing, writes
    /// `contents` to a new temporary file beside `path` (`mode`, and
    /// `owner` when given) and fsyncs it. Answers the directory and the
    /// temporary file's path; the caller renames or links it into place and
    /// unlinks it.
    private static func prepareTemporary(for path: String, contents: String, mode: mode_t = 0o600,
                                         owner: (uid: uid_t, gid: gid_t)? = nil) throws(TokenKeyFileError)
        -> (directory: String, temporary: String) {
        let (directory, name) = split(path)
        try createDirectory(directory, for: path)
        var suffix = [UInt8](repeating: 0, count: 6)
        guard getentropy(&suffix, suffix.count) == 0 else { throw .init(.unwritable, path, "no random bytes: \(lastError())") }
        let temporary = directory + "/." + name + ".tmp-\(getpid())-" + Hex.encode(suffix)
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw .init(.unwritable, path, "cannot create '\(temporary)': \(lastError())") }
        var written = 0
        let bytes = Array(contents.utf8)
        let failure: String? = bytes.withUnsafeBytes { buffer in
            // The umask may have narrowed the mode, never widened it; `mode` exactly.
            guard fchmod(fd, mode) == 0 else { return "cannot chmod: \(lastError())" }
            if let owner, fchown(fd, owner.uid, owner.gid) != 0 {
                return "cannot give it owner uid \(owner.uid), gid \(owner.gid): \(lastError())"
            }
            while written < buffer.count {
                let count = Glibc.write(fd, buffer.baseAddress! + written, buffer.count - written)
                if count < 0 {
                    if errno == EINTR { continue }
                    return "cannot write: \(lastError())"
                }
                written += count
            }
            guard fsync(fd) == 0 else { return "cannot fsync: \(lastError())" }
            return nil
        }
        let closed = close(fd) == 0 ? nil : "cannot close: \(lastError())"
        if let problem = failure ?? closed {
            unlink(temporary)
            throw .init(.unwritable, path, "\(problem) ('\(temporary)')")
        }
        return (directory, temporary)
    }

    /// `path`'s directory ("." for a bare name) and last component.
    private static func split(_ path: String) -> (directory: String, name: String) {
        guard let slash = path.lastIndex(of: "/") else { return (".", path) }
        let directory = String(path[..<slash])
        return (directory.isEmpty ? "/" : directory, String(path[path.index(after: slash)...]))
    }

    /// Creates `directory` and any missing parents, each 0700 (chmod after
    /// mkdir, so the umask cannot widen or narrow it); an existing directory
    /// is left as it is.
    private static func createDirectory(_ directory: String, for path: String) throws(TokenKeyFileError) {
        var status = stat()
        if stat(directory, &status) == 0 {
            guard status.st_mode & S_IFMT == S_IFDIR else { throw .init(.unwritable, path, "'\(directory)' is not a directory") }
            return
        }
        let (parent, _) = split(directory)
        if parent != directory { try createDirectory(parent, for: path) }
        guard mkdir(directory, 0o700) == 0 || errno == EEXIST else {
            throw .init(.unwritable, path, "cannot create directory '\(directory)': \(lastError())")
        }
        guard chmod(directory, 0o700) == 0 else {
            throw .init(.unwritable, path, "cannot chmod directory '\(directory)': \(lastError())")
        }
    }

    /// fsyncs `directory`, so a rename or link into it survives a crash.
    private static func syncDirectory(_ directory: String, for path: String) throws(TokenKeyFileError) {
        let fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw .init(.unwritable, path, "cannot open directory to fsync: \(lastError())") }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw .init(.unwritable, path, "cannot fsync directory: \(lastError())") }
    }

    private static func lastError() -> String { String(cString: strerror(errno)) }
}

/// Why a token key file could not be loaded or written: the path, the line
/// when one line is at fault, and what is wrong with it.
public struct TokenKeyFileError: Error, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// No file at the path (`loadOrGenerate` generates one then).
        case missing
        /// The file exists but cannot be read, is not a regular file, or is too large.
        case unreadable
        /// Group or others may access it (`load(path:allowGroupOrOtherAccess:)`).
        case tooOpen
        /// It is not a valid token key file; `line` names the line when one is at fault.
        case malformed
        /// Creating or replacing it failed.
        case unwritable
    }

    public let kind: Kind
    public let path: String
    /// 1-based.
    public let line: Int?
    public let detail: String

    init(_ kind: Kind, _ path: String, line: Int? = nil, _ detail: String) {
        self.kind = kind
        self.path = path
        self.line = line
        self.detail = detail
    }

    public var description: String {
        var text = "token key file '\(path)'\(line.map { " line \($0)" } ?? ""): \(detail)"
        if kind == .malformed {
            text += " (restore it from a backup: a new key file cannot open the tokens already stored)"
        }
        return text
    }
}
