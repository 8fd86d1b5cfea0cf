import Foundation
import LMDB
import Postgres
@testable import RegistryCore
@testable import RegistryLMDB
@testable import RegistryPostgres
@testable import TokenSealing
import RegistryTestSupport
import Testing

/// Sealed values are bound to their record (`TokenSlot`); registries
/// written before that (each value bound to its kind only, `TokenSealer`
/// format 1) are sealed again at open, on either backend, and no value of
/// the old binding is left.
struct SealedValueBindingTests {

    @Test func anLMDBRegistryOfUnboundValuesIsBoundAtOpen() async throws {
        let f = try makeStore(); defer { f.close() }
        try await fillForBinding(f)
        let schema = f.lmdb.schema
        try f.lmdb.environment.write { txn in
            for kind in TokenKind.allCases {
                var rewritten: [([UInt8], [UInt8])] = []
                try txn.scan(schema.database(kind)) { key, value in
                    let token = try TokenValue(decoding: value, in: TokenSlot(kind, key: key), TestKeys.vault)
                    var w = ByteWriter(version: 2)
                    w.byte(UInt8(APNsEnvironment.allCases.firstIndex(of: token.environment)!))
                    w.timestamp(token.updatedAt)
                    w.blob(unboundSeal(token.token, kind))
                    rewritten.append((key, w.bytes))
                    return true
                }
                for (key, value) in rewritten { try txn.put(value, for: key, in: schema.database(kind)) }
            }
            var w = ByteWriter(version: 1)
            w.varint(3)
            try txn.put(w.bytes, for: Schema.MetaKey.schemaVersion, in: schema.meta)
        }
        try f.reopen()
        let formats = try f.lmdb.environment.read { txn in
            var formats: [UInt8: Int] = [:]
            for kind in TokenKind.allCases {
                try txn.scan(f.lmdb.schema.database(kind)) { _, value in
                    formats[try TokenValue.sealed(in: value).first ?? 0, default: 0] += 1
                    return true
                }
            }
            return formats
        }
        #expect(formats == [2: 4], "every value sealed again, bound")
        let version = try f.lmdb.environment.read { txn in try txn.get(Schema.MetaKey.schemaVersion, in: f.lmdb.schema.meta) }
        #expect(version == [1, UInt8(Schema.version)])
        try await expectEveryTokenOpensAfterBinding(f)
    }

}
