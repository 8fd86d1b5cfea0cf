/// Constant-time comparison of two byte strings, for secrets such as the
/// internal API key, HMAC tags and cursor MACs.
///
/// The loop always runs over the longer input and never exits early, so its
/// time depends only on the two lengths, never on where the bytes first
/// differ. Limit: the lengths themselves are not hidden.
public func constantTimeEquals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    var difference = UInt64(truncatingIfNeeded: a.count ^ b.count)
    let length = max(a.count, b.count)
    for index in 0..<length {
        let left = index < a.count ? a[index] : 0
        let right = index < b.count ? b[index] : 0
        difference |= UInt64(left ^ right)
    }
    return difference == 0
}
