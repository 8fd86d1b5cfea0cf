extension String {
    /// Whether both strings hold the same UTF-8 bytes. Ids and tokens are
    /// compared as bytes, never with `==`, which holds canonically equivalent
    /// strings equal while their stored bytes differ. Compared over the two
    /// contiguous buffers: `utf8.elementsEqual` walks both views through
    /// their iterators, about 70 instructions a byte, and a launch upsert
    /// compares its 64-byte token this way.
    public func hasSameBytes(as other: String) -> Bool {
        guard utf8.count == other.utf8.count else { return false }
        var a = self, b = other
        return a.withUTF8 { x in b.withUTF8 { y in x.elementsEqual(y) } }
    }
}
