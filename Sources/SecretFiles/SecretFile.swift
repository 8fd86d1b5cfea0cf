import Glibc

/// Files that hold a secret: the APNs and FCM keys, the JWT secret, the
/// internal and operator API keys, the token keys. One rule for all of
/// them, as ssh has for a private key: a file with any permission bit for
/// group or others (`mode & 077`) is refused, because whoever else can read
/// it holds the secret already (and a backup or a shared mount copies that
/// mode along). Refusing at start, with the `chmod` that mends it, is
/// cheaper than finding the leak later.
///
/// The checks are made with `fstat` on the open descriptor, so they are
/// about the very file that is read, whatever a rename did meanwhile.
public enum SecretFile {
    /// A secret file larger than this is refused unread (the largest, a
    /// service account, is a few kilobytes).
    public static let defaultMaximumBytes = 1 << 20

    /// The whole file at `path`: a regular file of at most `maximumBytes`,
    /// closed to group and others unless `allowingGroupOrOtherAccess` (for
    /// a mounted secret volume whose mode cannot be set; its caller logs it).
    public static func read(_ path: String, maximumBytes: Int = defaultMaximumBytes,
                            allowingGroupOrOtherAccess: Bool = false) throws(SecretFileError) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw SecretFileError(path, errno == ENOENT ? .missing : .unreadable(lastError())) }
        defer { close(fd) }
        var status = stat()
        guard fstat(fd, &status) == 0 else { throw SecretFileError(path, .unreadable(lastError())) }
        guard status.st_mode & S_IFMT == S_IFREG else { throw SecretFileError(path, .notRegularFile) }
        if !allowingGroupOrOtherAccess, let problem = problem(path, mode: status.st_mode) { throw problem }
        guard status.st_size <= maximumBytes else { throw SecretFileError(path, .tooLarge(maximumBytes: maximumBytes)) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = Glibc.read(fd, &chunk, chunk.count)
            if count < 0 {
                if errno == EINTR { continue }
                throw SecretFileError(path, .unreadable(lastError()))
            }
            if count == 0 { return bytes }
            bytes.append(contentsOf: chunk[0..<count])
            // The file may have grown since fstat.
            guard bytes.count <= maximumBytes else { throw SecretFileError(path, .tooLarge(maximumBytes: maximumBytes)) }
        }
    }

    /// Refuses an existing file at `path` that group or others may access,
    /// without reading it: for a file a later step reads, checked before
    /// anything is written. A missing file passes (it is generated, or its
    /// reader names it missing).
    public static func checkPrivate(_ path: String) throws(SecretFileError) {
        var status = stat()
        guard stat(path, &status) == 0 else { return }
        if let problem = problem(path, mode: status.st_mode) { throw problem }
    }

    private static func problem(_ path: String, mode: mode_t) -> SecretFileError? {
        mode & 0o077 == 0 ? nil : SecretFileError(path, .openToGroupOrOthers(mode: mode & 0o777))
    }

    private static func lastError() -> String { String(cString: strerror(errno)) }
}
