import Testing
@testable import TokenSealing

@Suite struct TokenKeyRingTests {
    static func key(_ byte: UInt8) -> [UInt8] { [UInt8](repeating: byte, count: 32) }

    @Test func generatedRingHasOneSealingKeyAndAnIndexKey() throws {
        let ring = try TokenKeyRing.generate()
        #expect(ring.sealingKeys.map(\.id) == [1])
        #expect(ring.currentKeyID == 1)
        #expect(ring.currentKey.bytes.count == 32)
        #expect(ring.indexKey.count == 32)
        #expect(ring.indexKey != ring.currentKey.bytes)
        #expect(try TokenKeyRing.generate().indexKey != ring.indexKey)
    }

    @Test func addingMakesTheNextIDCurrentAndKeepsTheIndexKey() throws {
        let ring = try TokenKeyRing.generate()
        let rotated = try ring.addingRandomKey()
        #expect(rotated.sealingKeys.map(\.id) == [1, 2])
        #expect(rotated.currentKeyID == 2)
        #expect(rotated.currentKey.bytes != ring.currentKey.bytes)
        #expect(rotated.sealingKey(id: 1) == ring.currentKey)
        #expect(rotated.indexKey == ring.indexKey)
        let explicit = try rotated.adding(newKey: Self.key(7))
        #expect(explicit.currentKey == (try TokenKeyRing.SealingKey(id: 3, bytes: Self.key(7))))
    }

    @Test func retiringRemovesAnOldKeyButNeverTheCurrentOne() throws {
        let ring = try TokenKeyRing.generate().addingRandomKey().addingRandomKey()
        let retired = try ring.retiring(1)
        #expect(retired.sealingKeys.map(\.id) == [2, 3])
        #expect(retired.sealingKey(id: 1) == nil)
        #expect(throws: TokenKeyRingError.retiringCurrentKey(3)) { try ring.retiring(3) }
        #expect(throws: TokenKeyRingError.unknownKeyID(1)) { try retired.retiring(1) }
        // The highest id never leaves, so a retired id is never handed out again.
        #expect(try retired.retiring(2).addingRandomKey().currentKeyID == 4)
    }

    @Test func idsRunOutAt255() throws {
        let ring = try TokenKeyRing(indexKey: Self.key(0), sealingKeys: [.init(id: 255, bytes: Self.key(1))],
                                    currentKeyID: 255)
        #expect(throws: TokenKeyRingError.keyIDsExhausted) { try ring.addingRandomKey() }
    }

    @Test func initialiserRefusesInconsistentRings() throws {
        let one = try TokenKeyRing.SealingKey(id: 1, bytes: Self.key(1))
        let two = try TokenKeyRing.SealingKey(id: 2, bytes: Self.key(2))
        #expect(throws: TokenKeyRingError.wrongKeyLength(key: "sealing key 4", length: 31)) {
            try TokenKeyRing.SealingKey(id: 4, bytes: [UInt8](repeating: 0, count: 31))
        }
        #expect(throws: TokenKeyRingError.wrongKeyLength(key: "index key", length: 33)) {
            try TokenKeyRing(indexKey: [UInt8](repeating: 0, count: 33), sealingKeys: [one], currentKeyID: 1)
        }
        #expect(throws: TokenKeyRingError.noSealingKey) {
            try TokenKeyRing(indexKey: Self.key(0), sealingKeys: [], currentKeyID: 1)
        }
        #expect(throws: TokenKeyRingError.duplicateKeyID(1)) {
            try TokenKeyRing(indexKey: Self.key(0), sealingKeys: [one, two, one], currentKeyID: 2)
        }
        #expect(throws: TokenKeyRingError.unknownKeyID(3)) {
            try TokenKeyRing(indexKey: Self.key(0), sealingKeys: [one, two], currentKeyID: 3)
        }
        #expect(throws: TokenKeyRingError.currentKeyNotNewest(current: 1, newest: 2)) {
            try TokenKeyRing(indexKey: Self.key(0), sealingKeys: [one, two], currentKeyID: 1)
        }
        #expect(throws: TokenKeyRingError.indexKeyIsASealingKey(2)) {
            try TokenKeyRing(indexKey: Self.key(2), sealingKeys: [one, two], currentKeyID: 2)
        }
        let ring = try TokenKeyRing(indexKey: Self.key(0), sealingKeys: [two, one], currentKeyID: 2)
        #expect(ring.sealingKeys.map(\.id) == [1, 2])
    }

    @Test func descriptionShowsNoKeyMaterial() throws {
        let ring = try TokenKeyRing(indexKey: Self.key(0xAB), sealingKeys: [.init(id: 1, bytes: Self.key(0xCD))],
                                    currentKeyID: 1)
        #expect(ring.description == "TokenKeyRing(sealing keys 1, current 1)")
        #expect("\(ring.currentKey)" == "sealing key 1")
    }
}
