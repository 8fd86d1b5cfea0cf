import CLMDB

/// A named database of an environment, opened once by `Environment.openDatabase`.
public struct Database: Hashable, Sendable {
    public let name: String
    let dbi: MDB_dbi
}

/// Storage use of an environment.
public struct EnvironmentInfo: Sendable, Hashable {
    public var mapSizeBytes: Int
    /// Pages in use (last page number + 1) times the page size.
    public var usedBytes: Int
    public var pageSize: Int
    public var maxReaders: Int
    public var readersInUse: Int
}
