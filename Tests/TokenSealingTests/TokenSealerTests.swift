import COpenSSL
import Crypto
import Codecs
import Dispatch
import Synchronization
import Testing
@testable import TokenSealing

@Suite struct TokenSealerTests {
    static let push = Array("push".utf8)
    static let pushToStart = Array("pushToStart".utf8)
    static let token = Hex.decode("6c3b2e9a8f1d4c7b5a0e3f2d1c9b8a7f6e5d4c3b2a1f0e9d8c7b6a5f4e3d2c1b")!

    @Test func roundTripAndLayout() throws {
        let sealer = TokenSealer(ring: try TokenKeyRing.generate())
        let sealed = sealer.seal(Self.token, context: Self.push)
        #expect(sealed.count == Self.token.count + 30)
        #expect(sealed[0] == 2)
        #expect(sealed[1] == 1)
        #expect(try sealer.open(sealed, context: Self.push) == Self.token)
        #expect(try sealer.open(sealer.seal([]), context: []) == [])
        let long = [UInt8](repeating: 0x5A, count: 1000)
        #expect(try sealer.open(sealer.seal(long)) == long)
    }

    @Test func everySealIsDifferentButOpensToTheSameToken() throws {
        let sealer = TokenSealer(ring: try TokenKeyRing.generate())
        let values = (0..<200).map { _ in sealer.seal(Self.token, context: Self.push) }
        #expect(Set(values).count == values.count)
        #expect(Set(values.map { $0[2..<14] }).count == values.count)
        for value in values { #expect(try sealer.open(value, context: Self.push) == Self.token) }
    }

    /// The layout is exactly header | nonce | AES-256-GCM(key, nonce, aad: header | context, token) | tag.
    @Test func sealedValueIsGCMOverHeaderAndContext() throws {
        let key = Hex.decode("feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308")!
        let ring = try TokenKeyRing(indexKey: TokenKeyRingTests.key(0), sealingKeys: [.init(id: 9, bytes: key)],
                                    currentKeyID: 9)
        let nonce = Hex.decode("cafebabefacedbaddecaf888")!
        let sealed = nonce.withUnsafeBytes { TokenSealer(ring: ring).seal(Self.token, context: Self.push, nonce: $0) }
        let expected = AESGCM.seal(key: key, nonce: nonce, associatedData: [2, 9] + Self.push, plaintext: Self.token)
        #expect(sealed == [2, 9] + nonce + expected.ciphertext + expected.tag)
    }

    /// A format 1 value (what the registry sealed before values were bound
    /// to their record) opens only where a migration asks for format 1, and
    /// a format 2 value never opens as format 1: the version byte is in the
    /// associated data.
    @Test func aFormatOneValueOpensOnlyWhenAskedFor() throws {
        let sealer = TokenSealer(ring: try TokenKeyRing.generate())
        let nonce = [UInt8](repeating: 7, count: TokenSealer.nonceLength)
        let old = nonce.withUnsafeBytes { sealer.seal(Self.token, context: Self.push, nonce: $0, format: 1) }
        #expect(old[0] == 1 && sealer.format(of: old) == 1 && sealer.keyID(of: old) == 1)
        #expect(throws: TokenSealError.unsupportedVersion(1)) { try sealer.open(old, context: Self.push) }
        #expect(try sealer.open(old, context: Self.push, format: 1) == Self.token)
        var relabelled = sealer.seal(Self.token, context: Self.push)
        relabelled[0] = 1
        #expect(throws: TokenSealError.authenticationFailed) { try sealer.open(relabelled, context: Self.push, format: 1) }
    }

    @Test func changingAnyByteFailsAuthentication() throws {
        let sealer = TokenSealer(ring: try TokenKeyRing.generate().addingRandomKey())
        let sealed = sealer.seal(Self.token, context: Self.push)
        for index in sealed.indices {
            for bit in [0x01, 0x80] as [UInt8] {
                var changed = sealed
                changed[index] ^= bit
                let expected: TokenSealError = switch index {
                case 0: .unsupportedVersion(changed[0])
                case 1: changed[1] == 1 ? .authenticationFailed : .unknownKey(changed[1])
                default: .authenticationFailed
                }
                #expect(throws: expected) { try sealer.open(changed, context: Self.push) }
            }
        }
    }

    @Test func wrongContextFails() throws {
        let sealer = TokenSealer(ring: try TokenKeyRing.generate())
        let sealed = sealer.seal(Self.token, context: Self.push)
        #expect(throws: TokenSealError.authenticationFailed) { try sealer.open(sealed, context: Self.pushToStart) }
        #expect(throws: TokenSealError.authenticationFailed) { try sealer.open(sealed) }
        #expect(throws: TokenSealError.authenticationFailed) {
            try sealer.open(sealer.seal(Self.token), context: Self.push)
        }
    }

    @Test func truncatedAndForeignValuesAreRefused() throws {
        let sealer = TokenSealer(ring: try TokenKeyRing.generate())
        let sealed = sealer.seal(Self.token)
        #expect(throws: TokenSealError.truncated(length: 0)) { try sealer.open([]) }
        #expect(throws: TokenSealError.truncated(length: 29)) { try sealer.open(Array(sealed.prefix(29))) }
        // Cut at the end: the tag is then read from ciphertext bytes.
        #expect(throws: TokenSealError.authenticationFailed) { try sealer.open(Array(sealed.dropLast())) }
        #expect(throws: TokenSealError.authenticationFailed) { try sealer.open(sealed + [0]) }
        // Another ring's key 1.
        let other = TokenSealer(ring: try TokenKeyRing.generate())
        #expect(throws: TokenSealError.authenticationFailed) { try other.open(sealed) }
        #expect(sealer.keyID(of: Array(sealed.prefix(29))) == nil)
        #expect(sealer.keyID(of: [3] + sealed.dropFirst()) == nil)
        #expect(sealer.keyID(of: [0] + sealed.dropFirst()) == nil)
    }

    @Test func unknownKeyIDIsItsOwnError() throws {
        let sealer = TokenSealer(ring: try TokenKeyRing.generate())
        var sealed = sealer.seal(Self.token)
        sealed[1] = 200
        #expect(throws: TokenSealError.unknownKey(200)) { try sealer.open(sealed) }
    }

    /// The string form opens what the array form opens and refuses what it refuses, with the same error.
    @Test func openStringAgreesWithOpen() throws {
        let sealer = TokenSealer(ring: try TokenKeyRing.generate())
        let text = "6c3b2e9a8f1d4c7b5a0e3f2d1c9b8a7f6e5d4c3b2a1f0e9d8c7b6a5f4e3d2c1b"
        let sealed = sealer.seal(Array(text.utf8), context: Self.push)
        let openString = { (value: [UInt8], context: [UInt8]) throws(TokenSealError) -> String in
            try value.withUnsafeBytes { bytes in Result { () throws(TokenSealError) in try sealer.openString(bytes, context: context) } }.get()
        }
        #expect(try openString(sealed, Self.push) == text)
        #expect(try openString(sealer.seal([]), []) == "")
        #expect(throws: TokenSealError.authenticationFailed) { try openString(sealed, Self.pushToStart) }
        var changed = sealed
        changed[20] ^= 1
        #expect(throws: TokenSealError.authenticationFailed) { try openString(changed, Self.push) }
        changed = sealed
        changed[1] = 200
        #expect(throws: TokenSealError.unknownKey(200)) { try openString(changed, Self.push) }
        #expect(throws: TokenSealError.truncated(length: 29)) { try openString(Array(sealed.prefix(29)), Self.push) }
        #expect(throws: TokenSealError.unsupportedVersion(1)) { try openString([1] + sealed.dropFirst(), Self.push) }
    }

    @Test func rotation() throws {
        let first = try TokenKeyRing.generate()
        let old = TokenSealer(ring: first).seal(Self.token, context: Self.push)
        let rotated = TokenSealer(ring: try first.addingRandomKey())
        #expect(try rotated.open(old, context: Self.push) == Self.token)
        let new = rotated.seal(Self.token, context: Self.push)
        #expect(rotated.keyID(of: old) == 1)
        #expect(rotated.keyID(of: new) == 2)
        #expect(try rotated.open(new, context: Self.push) == Self.token)
        // The old ring cannot open what the new key sealed.
        #expect(throws: TokenSealError.unknownKey(2)) { try TokenSealer(ring: first).open(new, context: Self.push) }
        let retired = TokenSealer(ring: try rotated.ring.retiring(1))
        #expect(throws: TokenSealError.unknownKey(1)) { try retired.open(old, context: Self.push) }
        #expect(try retired.open(new, context: Self.push) == Self.token)
    }

    @Test func indexKeyIsDeterministicPerContextAndSurvivesRotation() throws {
        let sealer = TokenSealer(ring: try TokenKeyRing.generate())
        let index = sealer.indexKey(for: Self.token, context: Self.push)
        #expect(index.count == 32)
        #expect(sealer.indexKey(for: Self.token, context: Self.push) == index)
        #expect(sealer.indexKey(for: Self.token, context: Self.pushToStart) != index)
        #expect(sealer.indexKey(for: Self.token) != index)
        #expect(sealer.indexKey(for: Self.token.reversed(), context: Self.push) != index)
        // The context's length is part of the input: no shifting bytes between context and token.
        #expect(sealer.indexKey(for: Array("Xy".utf8), context: Array("push".utf8))
                != sealer.indexKey(for: Array("y".utf8), context: Array("pushX".utf8)))
        let rotated = TokenSealer(ring: try sealer.ring.addingRandomKey().retiring(1))
        #expect(rotated.indexKey(for: Self.token, context: Self.push) == index)
        #expect(TokenSealer(ring: try TokenKeyRing.generate()).indexKey(for: Self.token, context: Self.push) != index)
    }

    /// The index key is HMAC-SHA-256 over (length of context, context, token), checked against the primitive.
    @Test func indexKeyIsHMACOverLengthContextAndToken() throws {
        let ring = try TokenKeyRing.generate()
        let expected = HMACSHA256.tag(message: [0, 4] + Self.push + Self.token, key: ring.indexKey)
        #expect(TokenSealer(ring: ring).indexKey(for: Self.token, context: Self.push) == expected)
    }

    /// One sealer shared by many threads, as the HTTP workers will use it.
    @Test func manyThreadsSealAndOpenAtOnce() throws {
        let sealer = TokenSealer(ring: try TokenKeyRing.generate().addingRandomKey())
        let older = TokenSealer(ring: try TokenKeyRing(indexKey: sealer.ring.indexKey,
                                                       sealingKeys: [sealer.ring.sealingKey(id: 1)!], currentKeyID: 1))
        let failures = Atomic<Int>(0)
        DispatchQueue.concurrentPerform(iterations: 16) { thread in
            for round in 0..<500 {
                var token = Self.token
                token[0] = UInt8(truncatingIfNeeded: thread)
                token[1] = UInt8(truncatingIfNeeded: round)
                let context = round % 2 == 0 ? Self.push : Self.pushToStart
                let sealed = (round % 3 == 0 ? older : sealer).seal(token, context: context)
                let opened = try? sealer.open(sealed, context: context)
                let index = sealer.indexKey(for: token, context: context)
                if opened != token || index != HMACSHA256.tag(message: [0, UInt8(context.count)] + context + token,
                                                              key: sealer.ring.indexKey) {
                    failures.add(1, ordering: .relaxed)
                }
            }
        }
        #expect(failures.load(ordering: .relaxed) == 0)
    }
}

/// `ContextPool`: a context has one user at a time; callers beyond its
/// slots get contexts of their own; a dropped slot is claimed again.
@Suite struct ContextPoolTests {
    @Test func slotsAreTakenOnceAndGivenBack() throws {
        let pool = ContextPool()
        var slots: [Int] = []
        for _ in 0..<ContextPool.capacity {
            let taken = try #require(pool.take())
            #expect(taken.context == nil)
            slots.append(taken.slot)
        }
        #expect(Set(slots).count == ContextPool.capacity)
        #expect(pool.take() == nil)
        let context = try #require(EVP_CIPHER_CTX_new())
        pool.give(context, to: slots[5])
        let again = try #require(pool.take())
        #expect(again.slot == slots[5] && again.context == context)
        pool.drop(context, from: again.slot)
        let claimed = try #require(pool.take())
        #expect(claimed.slot == slots[5] && claimed.context == nil)
        pool.drop(nil, from: claimed.slot)
    }

    /// More threads than the pool has slots, each checking that no other
    /// thread holds the context it was handed (a context in two calls at
    /// once would corrupt both).
    @Test func concurrentCallersNeverShareAContext() throws {
        let sealer = TokenSealer(ring: try TokenKeyRing.generate())
        let sealed = (0..<8).map { sealer.seal(Array("token-\($0)".utf8), context: TokenSealerTests.push) }
        let failures = Atomic<Int>(0)
        DispatchQueue.concurrentPerform(iterations: ContextPool.capacity + 16) { thread in
            for round in 0..<200 {
                let index = (thread + round) % sealed.count
                let opened = try? sealer.open(sealed[index], context: TokenSealerTests.push)
                if opened != Array("token-\(index)".utf8) { failures.add(1, ordering: .relaxed) }
            }
        }
        #expect(failures.load(ordering: .relaxed) == 0)
    }
}

/// Prints the throughput (debug build here; see TokenSealingBenchmark for a release measurement).
@Suite struct TokenSealingBenchmarkTests {
    @Test func benchmarkRunsAndPrints() throws {
        for threads in [1, 2] {
            let result = try TokenSealingBenchmark.run(threads: threads, duration: .milliseconds(300))
            print("TokenSealingBenchmark (debug build): \(result)")
            #expect(result.sealOpenPairsPerSecond > 0 && result.indexKeysPerSecond > 0)
        }
    }
}
