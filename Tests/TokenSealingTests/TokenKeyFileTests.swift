import Codecs
import Glibc
import Testing
@testable import TokenSealing

@Suite struct TokenKeyFileTests {
    /// A fresh directory under /tmp, removed with its contents when `body` returns.
    private func withTemporaryDirectory(_ body: (String) throws -> Void) throws {
        var template = Array("/tmp/token-key-file-tests.XXXXXX".utf8CString)
        let created: UnsafeMutablePointer<CChar>? = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        let directory = String(cString: try #require(created))
        defer { remove(directory) }
        try body(directory)
    }

    private func remove(_ path: String) {
        var status = stat()
        guard lstat(path, &status) == 0 else { return }
        if status.st_mode & S_IFMT == S_IFDIR {
            for name in list(path) { remove(path + "/" + name) }
            rmdir(path)
        } else {
            unlink(path)
        }
    }

    private func list(_ directory: String) -> [String] {
        guard let handle = opendir(directory) else { return [] }
        defer { closedir(handle) }
        var names: [String] = []
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
            if name != "." && name != ".." { names.append(name) }
        }
        return names.sorted()
    }

    private func mode(_ path: String) -> UInt32 {
        var status = stat()
        precondition(stat(path, &status) == 0)
        return UInt32(status.st_mode) & 0o777
    }

    private func write(_ text: String, to path: String, mode: mode_t = 0o600) {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode)
        precondition(fd >= 0)
        _ = Glibc.write(fd, text, text.utf8.count)
        fchmod(fd, mode)
        close(fd)
    }

    private func contents(_ path: String) -> [UInt8] {
        let fd = open(path, O_RDONLY)
        precondition(fd >= 0)
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: 65536)
        let count = Glibc.read(fd, &bytes, bytes.count)
        return Array(bytes.prefix(max(count, 0)))
    }

    @Test func roundTripCreatesPrivateFileAndDirectories() throws {
        try withTemporaryDirectory { root in
            let ring = try TokenKeyRing.generate().addingRandomKey().addingRandomKey().retiring(1)
            let path = root + "/data/secrets/token-keys"
            try TokenKeyFile.write(ring, to: path)
            #expect(try TokenKeyFile.load(path: path) == ring)
            #expect(mode(path) == 0o600)
            #expect(mode(root + "/data") == 0o700)
            #expect(mode(root + "/data/secrets") == 0o700)
            #expect(list(root + "/data/secrets") == ["token-keys"])
        }
    }

    @Test func textIsTheDocumentedFormat() throws {
        let ring = try TokenKeyRing(indexKey: TokenKeyRingTests.key(0xAA),
                                    sealingKeys: [.init(id: 1, bytes: TokenKeyRingTests.key(0x01)),
                                                  .init(id: 2, bytes: TokenKeyRingTests.key(0x02))],
                                    currentKeyID: 2)
        let lines: [String] = TokenKeyFile.render(ring).split(separator: "\n").filter { !$0.hasPrefix("#") }.map(String.init)
        let expected: [String] = [
            "registryd-token-keys 1",
            "index " + String(repeating: "aa", count: 32),
            "seal 1 " + String(repeating: "01", count: 32),
            "seal 2 " + String(repeating: "02", count: 32) + " current",
            "end",
        ]
        #expect(lines == expected)
        #expect(try TokenKeyFile.parse(Array(TokenKeyFile.render(ring).utf8), path: "x") == ring)
    }

    @Test func writeReplacesAtomicallyAndLeavesNoTemporaryFile() throws {
        try withTemporaryDirectory { root in
            let path = root + "/token-keys"
            let first = try TokenKeyRing.generate()
            try TokenKeyFile.write(first, to: path)
            let second = try first.addingRandomKey()
            try TokenKeyFile.write(second, to: path)
            #expect(try TokenKeyFile.load(path: path) == second)
            #expect(mode(path) == 0o600)
            #expect(list(root) == ["token-keys"])
        }
    }

    /// A rotation run as root beside a server running as its own user
    /// (systemd's DynamicUser): the new file keeps the old one's owner,
    /// group and mode, so the server can still read it.
    @Test(.enabled(if: geteuid() == 0, "changing a file's owner needs root"))
    func replaceKeepsTheOldFilesOwnerGroupAndMode() throws {
        try withTemporaryDirectory { root in
            let path = root + "/token-keys"
            let first = try TokenKeyRing.generate()
            try TokenKeyFile.write(first, to: path)
            #expect(chown(path, 65534, 65534) == 0 && chmod(path, 0o640) == 0)
            let second = try first.addingRandomKey()
            try TokenKeyFile.replace(second, at: path)
            var status = stat()
            #expect(stat(path, &status) == 0)
            #expect(status.st_uid == 65534 && status.st_gid == 65534 && status.st_mode & 0o777 == 0o640)
            #expect(try TokenKeyFile.load(path: path, allowGroupOrOtherAccess: true) == second)
            #expect(list(root) == ["token-keys"])
        }
    }

    @Test func replaceNeedsAFileToReplace() throws {
        try withTemporaryDirectory { root in
            #expect(throws: TokenKeyFileError.self) { try TokenKeyFile.replace(try TokenKeyRing.generate(), at: root + "/none") }
            #expect(list(root) == [])
        }
    }

    @Test func loadOrGenerateGeneratesOnceThenLoads() throws {
        try withTemporaryDirectory { root in
            let path = root + "/secrets/token-keys"
            let (ring, created) = try TokenKeyFile.loadOrGenerate(path: path)
            #expect(created)
            #expect(ring.sealingKeys.map(\.id) == [1])
            #expect(mode(path) == 0o600)
            #expect(mode(root + "/secrets") == 0o700)
            let again = try TokenKeyFile.loadOrGenerate(path: path)
            #expect(!again.created)
            #expect(again.ring == ring)
            #expect(list(root + "/secrets") == ["token-keys"])
        }
    }

    /// A damaged file stays as it is: an error, never a new ring over it.
    @Test func loadOrGenerateNeverReplacesADamagedFile() throws {
        try withTemporaryDirectory { root in
            let path = root + "/token-keys"
            let ring = try TokenKeyRing.generate()
            let text = TokenKeyFile.render(ring)
            let damaged = String(text.dropLast(20))
            write(damaged, to: path)
            let error = try #require(throws: TokenKeyFileError.self) { try TokenKeyFile.loadOrGenerate(path: path) }
            #expect(error.kind == .malformed)
            #expect(contents(path) == Array(damaged.utf8))
            write("", to: path)
            #expect(throws: TokenKeyFileError.self) { try TokenKeyFile.loadOrGenerate(path: path) }
            #expect(contents(path) == [])
        }
    }

    @Test func fileOpenToGroupOrOthersIsRefusedUnlessAllowed() throws {
        try withTemporaryDirectory { root in
            let path = root + "/token-keys"
            let ring = try TokenKeyRing.generate()
            for mode in [0o640, 0o604, 0o644, 0o660] as [mode_t] {
                write(TokenKeyFile.render(ring), to: path, mode: mode)
                let error = try #require(throws: TokenKeyFileError.self) { try TokenKeyFile.load(path: path) }
                #expect(error.kind == .tooOpen)
                #expect(error.description.contains(path) && error.description.contains("chmod 600"))
                #expect(try TokenKeyFile.load(path: path, allowGroupOrOtherAccess: true) == ring)
            }
            write(TokenKeyFile.render(ring), to: path, mode: 0o400)
            #expect(try TokenKeyFile.load(path: path) == ring)
        }
    }

    @Test func missingAndNonRegularFiles() throws {
        try withTemporaryDirectory { root in
            let missing = try #require(throws: TokenKeyFileError.self) { try TokenKeyFile.load(path: root + "/nothing") }
            #expect(missing.kind == .missing)
            let directory = try #require(throws: TokenKeyFileError.self) { try TokenKeyFile.load(path: root) }
            #expect(directory.kind == .unreadable)
        }
    }

    static let index = "index " + String(repeating: "ab", count: 32)
    static let seal1 = "seal 1 " + String(repeating: "01", count: 32)
    static let seal2 = "seal 2 " + String(repeating: "02", count: 32)

    /// Damaged or hand-mangled files, each refused with the line at fault (nil: the file as a whole).
    @Test(arguments: [
        ("", nil, "empty"),
        ("# only a comment\n\n", nil, "only comments"),
        ("hello\n", 1, "first line must be"),
        ("# c\nregistryd-token-keys 2\n", 2, "format version 2"),
        ("registryd-token-keys 1\n\(index)\n\(seal1) current\n", nil, "cut short"),
        ("registryd-token-keys 1\n\(index)\n\(seal1) current\nend\nseal 2\n", 5, "after \"end\""),
        ("registryd-token-keys 1\n\(index)\n\(seal1) current\nen", 4, "unknown entry \"en\""),
        ("registryd-token-keys 1\nindex abcd\n\(seal1) current\nend\n", 2, "4 hex digits"),
        ("registryd-token-keys 1\nindex " + String(repeating: "zz", count: 32) + "\n", 2, "not hex"),
        ("registryd-token-keys 1\n\(index)\n\(index)\n", 3, "second index key"),
        ("registryd-token-keys 1\n\(index)\nseal 1 " + String(repeating: "01", count: 31) + " current\nend\n", 3, "62 hex digits"),
        ("registryd-token-keys 1\n\(index)\nseal 256 " + String(repeating: "01", count: 32) + "\n", 3, "0 to 255"),
        ("registryd-token-keys 1\n\(index)\nseal -1 " + String(repeating: "01", count: 32) + "\n", 3, "0 to 255"),
        ("registryd-token-keys 1\n\(index)\n\(seal1) newest\n", 3, "expected \"seal"),
        ("registryd-token-keys 1\n\(index)\n\(seal1)\n\(seal1) current\nend\n", 4, "key id 1 again (first on line 3)"),
        ("registryd-token-keys 1\n\(index)\n\(seal1) current\n\(seal2) current\nend\n", 4, "second current key"),
        ("registryd-token-keys 1\n\(index)\n\(seal1)\n\(seal2)\nend\n", nil, "no sealing key is marked current"),
        ("registryd-token-keys 1\n\(index)\n\(seal1) current\n\(seal2)\nend\n", 3, "not the newest"),
        ("registryd-token-keys 1\n\(seal1) current\nend\n", nil, "no index key"),
        ("registryd-token-keys 1\n\(index)\nend\n", nil, "no sealing key"),
        ("registryd-token-keys 1\nindex " + String(repeating: "01", count: 32) + "\n\(seal1) current\nend\n", 3,
         "index key is the same as sealing key 1"),
        ("registryd-token-keys 1\n\(index)\n\(seal1) current\u{e9}\nend\n", 3, "not text"),
        ("registryd-token-keys 1\n\(index)\n\(seal1) cur\u{0}rent\nend\n", 3, "not text"),
    ] as [(String, Int?, String)])
    func damagedFileIsRefusedWithItsLine(text: String, line: Int?, detail: String) throws {
        let error = try #require(throws: TokenKeyFileError.self) {
            try TokenKeyFile.parse(Array(text.utf8), path: "/srv/registry/secrets/token-keys")
        }
        #expect(error.kind == .malformed)
        #expect(error.line == line)
        #expect(error.detail.contains(detail), "\(error.detail)")
        #expect(error.description.hasPrefix("token key file '/srv/registry/secrets/token-keys'"
                                            + (line.map { " line \($0):" } ?? ":")))
    }

    /// Comments, blank lines, tabs, CRLF and a missing final newline are all fine.
    @Test func tolerantOfLayout() throws {
        let text = "# keys\r\n\r\n  registryd-token-keys\t1\r\n# the index\n\(Self.index)  \n\tseal 1 "
            + String(repeating: "01", count: 32) + "\n" + "seal 2 " + String(repeating: "02", count: 16).uppercased()
            + String(repeating: "02", count: 16) + " current\nend"
        let ring = try TokenKeyFile.parse(Array(text.utf8), path: "x")
        #expect(ring.sealingKeys.map(\.id) == [1, 2])
        #expect(ring.currentKeyID == 2)
        #expect(ring.currentKey.bytes == TokenKeyRingTests.key(2))
    }
}
