import Foundation

/// The pages of an LMDB file, read straight from `data.mdb` (LMDB 0.9's
/// format on a 64-bit machine): which page numbers each B-tree (the free
/// list, the main database, each named database) reaches from the current
/// meta page.
///
/// LMDB writes copy-on-write: a commit writes every page it changed to a
/// page number no live tree reached before (a new one, or a free one). So
/// the pages a commit wrote for a tree are the ones it reaches after the
/// commit and did not reach before: `PageWalk.written(before:after:)`. It
/// reads the file only; run it while nothing writes (between two sweep
/// steps of a store no one else uses).
struct PageWalk {
    /// Tree name ("free", "main", or a named database) → page numbers it reaches.
    var trees: [String: Set<UInt64>] = [:]

    private static let branch: UInt16 = 0x01, leaf: UInt16 = 0x02, leaf2: UInt16 = 0x20
    private static let bigData: UInt16 = 0x01, subData: UInt16 = 0x02
    private static let invalid = UInt64.max

    init(file path: String) throws {
        let data = try Data(contentsOf: URL(fileURLWithPath: path), options: .alwaysMapped)
        try data.withUnsafeBytes { (raw: UnsafeRawBufferPointer) in
            let reader = Reader(bytes: raw)
            // Two meta pages; the one with the higher txnid is current. The
            // page size is kept in the free database's md_pad.
            let metas = [0, 1].map { reader.meta(at: $0 * 4096) }
            let meta = metas[0].txnid >= metas[1].txnid ? metas[0] : metas[1]
            let pageSize = Int(meta.pageSize)
            guard pageSize >= 512, raw.count % pageSize == 0 else { throw WalkError.format("page size \(pageSize)") }
            let walker = Walker(reader: reader, pageSize: pageSize)
            trees["free"] = try walker.tree(meta.freeRoot).pages
            let main = try walker.tree(meta.mainRoot)
            trees["main"] = main.pages
            for (name, root) in main.subtrees { trees[name] = try walker.tree(root, withSubtrees: true).pages }
        }
    }

    /// Pages each tree reaches in `after` and did not in `before`, by tree.
    static func written(before: PageWalk, after: PageWalk) -> [String: Int] {
        var written: [String: Int] = [:]
        for (name, pages) in after.trees {
            let new = pages.subtracting(before.trees[name] ?? [])
            if !new.isEmpty { written[name] = new.count }
        }
        return written
    }

    enum WalkError: Error { case format(String) }

    private struct Meta {
        var pageSize: UInt32
        var freeRoot: UInt64
        var mainRoot: UInt64
        var txnid: UInt64
    }

    private struct Reader {
        let bytes: UnsafeRawBufferPointer

        func u16(_ at: Int) -> UInt16 { bytes.loadUnaligned(fromByteOffset: at, as: UInt16.self) }
        func u32(_ at: Int) -> UInt32 { bytes.loadUnaligned(fromByteOffset: at, as: UInt32.self) }
        func u64(_ at: Int) -> UInt64 { bytes.loadUnaligned(fromByteOffset: at, as: UInt64.self) }

        /// MDB_meta after the 16-byte page header: magic, version, address,
        /// mapsize, two MDB_db (48 bytes each: pad, flags, depth, branch,
        /// leaf and overflow pages, entries, root), last page, txnid.
        func meta(at page: Int) -> Meta {
            let m = page + 16, free = m + 24, main = m + 72
            return Meta(pageSize: u32(free), freeRoot: u64(free + 40), mainRoot: u64(main + 40), txnid: u64(m + 128))
        }
    }

    private struct Walker {
        let reader: Reader
        let pageSize: Int

        /// Every page of the tree at `root`, and the subtrees its leaves
        /// name (key, root): the named databases, in the main database.
        /// `withSubtrees` counts those (duplicate-sorted values) as its own pages.
        func tree(_ root: UInt64, withSubtrees: Bool = false) throws -> (pages: Set<UInt64>, subtrees: [(String, UInt64)]) {
            var pages = Set<UInt64>()
            var subtrees: [(String, UInt64)] = []
            guard root != PageWalk.invalid else { return (pages, subtrees) }
            var stack = [root]
            while let pgno = stack.popLast() {
                let base = Int(pgno) * pageSize
                guard base + pageSize <= reader.bytes.count else { throw WalkError.format("page \(pgno) past the file") }
                pages.insert(pgno)
                let flags = reader.u16(base + 10)
                if flags & PageWalk.leaf2 != 0 { continue }
                let count = (Int(reader.u16(base + 12)) - 16) / 2
                for i in 0..<max(0, count) {
                    let node = base + Int(reader.u16(base + 16 + 2 * i))
                    let lo = UInt64(reader.u16(node)), hi = UInt64(reader.u16(node + 2))
                    let nodeFlags = reader.u16(node + 4), keySize = Int(reader.u16(node + 6))
                    if flags & PageWalk.branch != 0 {
                        stack.append(lo | hi << 16 | UInt64(nodeFlags) << 32)
                        continue
                    }
                    let data = node + 8 + keySize
                    if nodeFlags & PageWalk.bigData != 0 {
                        let first = reader.u64(data)
                        let overflow = Int(reader.u32(Int(first) * pageSize + 12))
                        for p in 0..<UInt64(max(1, overflow)) { pages.insert(first + p) }
                    } else if nodeFlags & PageWalk.subData != 0 {
                        let subRoot = reader.u64(data + 40)
                        if withSubtrees {
                            pages.formUnion(try tree(subRoot, withSubtrees: true).pages)
                        } else {
                            let name = UnsafeRawBufferPointer(rebasing: reader.bytes[(node + 8)..<(node + 8 + keySize)])
                            subtrees.append((String(decoding: name, as: UTF8.self), subRoot))
                        }
                    }
                }
            }
            return (pages, subtrees)
        }
    }
}
