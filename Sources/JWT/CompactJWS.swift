import JSON

/// A token split into its JWS Compact Serialization parts (RFC 7515 §7.1)
/// and decoded, before any signature or claim is trusted.
///
/// Limits: tokens longer than `maximumLength` bytes are refused unread; the
/// header must carry `alg` and may carry `kid` and `typ`; a `crit` header
/// (extensions we would have to understand) is refused, as RFC 7515 §4.1.11
/// requires for extensions we do not implement.
struct CompactJWS {
    static let maximumLength = 8 * 1024

    /// The ASCII `header.payload` the signature covers.
    let signingInput: [UInt8]
    let algorithm: JWSAlgorithm
    let keyId: String?
    let claims: JSONObject
    let signature: [UInt8]

    static func parse(_ token: String) -> Result<CompactJWS, JWTError> {
        let bytes = Array(token.utf8)
        guard bytes.count <= maximumLength else { return .failure(.malformed) }
        let parts = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 3 else { return .failure(.malformed) }
        guard let headerBytes = JOSEBase64URL.decode(Array(parts[0])),
              let header = JOSEJSON.parse(headerBytes)?.objectValue else { return .failure(.malformed) }
        guard let algorithmName = header["alg"]?.stringValue else { return .failure(.malformed) }
        guard let algorithm = JWSAlgorithm(rawValue: algorithmName) else { return .failure(.unsupportedAlgorithm) }
        guard header["crit"] == nil else { return .failure(.malformed) }
        var keyId: String?
        if let kid = header["kid"] {
            guard let text = kid.stringValue else { return .failure(.malformed) }
            keyId = text
        }
        if let typ = header["typ"], typ.stringValue == nil { return .failure(.malformed) }
        guard let payload = JOSEBase64URL.decode(Array(parts[1])),
              let claims = JOSEJSON.parse(payload)?.objectValue,
              let signature = JOSEBase64URL.decode(Array(parts[2])) else { return .failure(.malformed) }
        let signingInput = Array(bytes[..<parts[1].endIndex])
        return .success(CompactJWS(signingInput: signingInput, algorithm: algorithm, keyId: keyId,
                                   claims: claims, signature: signature))
    }
}
