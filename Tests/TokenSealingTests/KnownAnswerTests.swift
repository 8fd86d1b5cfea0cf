import Crypto
import Codecs
import Testing
@testable import TokenSealing

/// Published vectors, so the primitives are proven right rather than merely
/// consistent with themselves.
@Suite struct KnownAnswerTests {
    private func hex(_ text: String) -> [UInt8] { Hex.decode(text)! }

    /// The GCM specification's AES-256 test cases (McGrew and Viega, "The
    /// Galois/Counter Mode of Operation", appendix B; the same vectors as
    /// NIST's gcmEncryptExtIV256): 13 (nothing), 14 (one zero block), 15 (64
    /// bytes, no AAD) and 16 (60 bytes with 20 bytes of AAD).
    @Test(arguments: [
        (key: String(repeating: "0", count: 64), nonce: String(repeating: "0", count: 24), aad: "",
         plaintext: "", ciphertext: "", tag: "530f8afbc74536b9a963b4f1c4cb738b"),
        (key: String(repeating: "0", count: 64), nonce: String(repeating: "0", count: 24), aad: "",
         plaintext: String(repeating: "0", count: 32), ciphertext: "cea7403d4d606b6e074ec5d3baf39d18",
         tag: "d0d1c8a799996bf0265b98b5d48ab919"),
        (key: "feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308",
         nonce: "cafebabefacedbaddecaf888", aad: "",
         plaintext: "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72"
             + "1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b391aafd255",
         ciphertext: "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa"
             + "8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662898015ad",
         tag: "b094dac5d93471bdec1a502270e3cc6c"),
        (key: "feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308",
         nonce: "cafebabefacedbaddecaf888", aad: "feedfacedeadbeeffeedfacedeadbeefabaddad2",
         plaintext: "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72"
             + "1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39",
         ciphertext: "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa"
             + "8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662",
         tag: "76fc6ece0f4e1768cddf8853bb2d551b"),
    ])
    func aes256GCMSpecificationVectors(vector: (key: String, nonce: String, aad: String, plaintext: String,
                                                ciphertext: String, tag: String)) {
        let key = hex(vector.key), nonce = hex(vector.nonce), aad = hex(vector.aad)
        let sealed = AESGCM.seal(key: key, nonce: nonce, associatedData: aad, plaintext: hex(vector.plaintext))
        #expect(Hex.encode(sealed.ciphertext) == vector.ciphertext)
        #expect(Hex.encode(sealed.tag) == vector.tag)
        let opened = AESGCM.open(key: key, nonce: nonce, associatedData: aad,
                                 ciphertext: hex(vector.ciphertext), tag: hex(vector.tag))
        #expect(opened.map { Hex.encode($0) } == vector.plaintext)
    }

    /// The AAD split over two updates authenticates the same string as one.
    @Test func associatedDataInTwoPartsIsTheConcatenation() {
        let key = hex("feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308")
        let nonce = hex("cafebabefacedbaddecaf888")
        let aad = hex("feedfacedeadbeeffeedfacedeadbeefabaddad2")
        let plaintext = Array("a push token".utf8)
        let whole = AESGCM.seal(key: key, nonce: nonce, associatedData: aad, plaintext: plaintext)
        var ciphertext = [UInt8](repeating: 0, count: plaintext.count)
        var tag = [UInt8](repeating: 0, count: 16)
        let prepared = AESGCM.Key(key)
        let sealed = nonce.withUnsafeBytes { nonce in
            aad.withUnsafeBytes { aad in
                plaintext.withUnsafeBytes { plaintext in
                    ciphertext.withUnsafeMutableBytes { ciphertext in
                        tag.withUnsafeMutableBytes { tag in
                            prepared.seal(nonce: nonce,
                                          associatedData: UnsafeRawBufferPointer(rebasing: aad[..<7]),
                                          moreAssociatedData: UnsafeRawBufferPointer(rebasing: aad[7...]),
                                          plaintext: plaintext, ciphertext: ciphertext, tag: tag)
                        }
                    }
                }
            }
        }
        #expect(sealed)
        #expect(ciphertext == whole.ciphertext)
        #expect(tag == whole.tag)
    }

    /// Test case 16 with one bit of the tag, the ciphertext or the AAD changed: no plaintext.
    @Test func aes256GCMRefusesAnyChange() {
        let key = hex("feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308")
        let nonce = hex("cafebabefacedbaddecaf888")
        let aad = hex("feedfacedeadbeeffeedfacedeadbeefabaddad2")
        let ciphertext = hex("522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa"
                             + "8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662")
        let tag = hex("76fc6ece0f4e1768cddf8853bb2d551b")
        var changedTag = tag
        changedTag[15] ^= 1
        var changedCiphertext = ciphertext
        changedCiphertext[0] ^= 0x80
        var changedAAD = aad
        changedAAD[19] ^= 1
        #expect(AESGCM.open(key: key, nonce: nonce, associatedData: aad, ciphertext: ciphertext, tag: changedTag) == nil)
        #expect(AESGCM.open(key: key, nonce: nonce, associatedData: aad, ciphertext: changedCiphertext, tag: tag) == nil)
        #expect(AESGCM.open(key: key, nonce: nonce, associatedData: changedAAD, ciphertext: ciphertext, tag: tag) == nil)
        #expect(AESGCM.open(key: key, nonce: nonce, associatedData: [], ciphertext: ciphertext, tag: tag) == nil)
    }

    /// RFC 4231 test cases 1, 2 (a key shorter than the hash), 6 and 7 (keys
    /// longer than SHA-256's 64-byte block, hashed first).
    @Test(arguments: [
        (key: String(repeating: "0b", count: 20), data: Hex.encode(Array("Hi There".utf8)),
         mac: "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"),
        (key: Hex.encode(Array("Jefe".utf8)), data: Hex.encode(Array("what do ya want for nothing?".utf8)),
         mac: "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"),
        (key: String(repeating: "aa", count: 131),
         data: Hex.encode(Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8)),
         mac: "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"),
        (key: String(repeating: "aa", count: 131),
         data: Hex.encode(Array(("This is a test using a larger than block-size key and a larger than block-size data. "
                                 + "The key needs to be hashed before being used by the HMAC algorithm.").utf8)),
         mac: "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"),
    ])
    func hmacSHA256RFC4231(vector: (key: String, data: String, mac: String)) {
        #expect(Hex.encode(HMACSHA256.tag(message: hex(vector.data), key: hex(vector.key))) == vector.mac)
    }

    /// A message fed in parts is tagged as their concatenation, and a prepared key gives the same tag every time.
    @Test func hmacPartsAreConcatenated() {
        let key = HMACSHA256.Key(Array("Jefe".utf8))
        let parts = ["what do ya ", "", "want for nothing?"].map { Array($0.utf8) }
        for _ in 0..<3 {
            let tag = parts[0].withUnsafeBytes { a in parts[1].withUnsafeBytes { b in parts[2].withUnsafeBytes { c in key.tag(a, b, c) } } }
            #expect(Hex.encode(tag) == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        }
    }
}
