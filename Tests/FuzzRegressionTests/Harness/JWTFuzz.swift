import Codecs
@testable import JWT

/// Fuzz target `jwt`: compact-serialization parsing, JSON as JWT reads it
/// (`JOSEJSON`: repeated members refused, its own depth limit), NumericDate
/// and claim checks, JWKS parsing, base64url (strict, and JWT's reading with
/// padding), and verification with an HS256 secret and an RS256 / ES256 /
/// oct JWKS (with and without `kid`, with and without `iss`/`aud` rules).
///
/// Properties: nothing traps; a token verifies only when its signed part
/// (`header.payload`) is one this file's keys signed (`signedTokens`), so a
/// mutated header or payload that still verifies is a forged signature; a
/// verifier with no keys accepts nothing; strict base64url has one spelling
/// per byte string, JWT's reading none besides padding, and both round-trip.
///
/// The keys are test keys made for this file (the private halves were
/// thrown away); the tokens expire in 2096.
enum JWTFuzz {
    static let now: Int64 = 1_800_000_000
    static let secret = Array("fuzz-hs256-secret-0123456789abcdef".utf8)

    /// Public keys: RSA-2048 `r`, P-256 `e`, oct `o`, and an ignored `use: enc` key.
    static let jwksText = #"{"keys":[{"kty":"RSA","kid":"r","use":"sig","alg":"RS256","n":"sPNvnwLbKz0jKXDOnOPKwIYX8ELcqeI7CyYuYJ4FJPFucSGfCuRLZtvgEM4rxXIBwm4ffPuzpQ6_tKxeGVttgoYDsIwY8qmEWCescJxx2_9YfIcCMlzujCcl6Y8CTIDKpq94SloZkwN3YplCTewLuc7Hr-S79dOWnkdglLJPhR_LivIjpzpu18n2Er3Q_vKVkZWh_WwjAf6uERz6Ash5VFzlcnMFZ7ecHo97rM1YnvnMlU-veoydnL6QHi0s2iP9cxKDC1ZudpRExzJVmzeReNVHQcsbeIZYHJxsZAJv36VP8uVNPfnw1o6VqV1KrWjsPWza5Q0dXFdOuLPaHt0BeQ","e":"AQAB"},{"kty":"EC","kid":"e","crv":"P-256","x":"mzOtAWwg06hcyYBgOAWenJpQWaPwMDn40OLHBNRKIaU","y":"879lqEWzTXk2agLebm8X_OBWca2LpRbRm5naVlOId5A"},{"kty":"oct","kid":"o","k":"ZnV6ei1vY3Qta2V5LW1hdGVyaWFsLTAxMjM0NTY3ODk"},{"kty":"RSA","use":"enc","n":"AQAB","e":"AQAB"}]}"#

    /// Valid at `now` for both verifiers: HS256 (secret, then oct `o`), RS256 (`r`, then no kid), ES256 (`e`, then no kid).
    static let signedTokens = [
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJhbGljZSIsImV4cCI6NDAwMDAwMDAwMCwibmJmIjoxMDAwMDAwMDAwLCJpc3MiOiJodHRwczovL2lzc3Vlci5leGFtcGxlIiwiYXVkIjpbInJlZ2lzdHJ5Iiwib3RoZXIiXX0._bXRX1XyBF2eyOVtujnXM2rh6d6Psn4s1dUS98HTMQI",
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCIsImtpZCI6Im8ifQ.eyJzdWIiOiJib2IiLCJleHAiOjQwMDAwMDAwMDAuNSwiaXNzIjoiaHR0cHM6Ly9pc3N1ZXIuZXhhbXBsZSIsImF1ZCI6InJlZ2lzdHJ5IiwiaWF0IjoxNzAwMDAwMDAwfQ.v1l0JzbiEAVuWTS4iiMMiJV1uXDUeVoBD-LtFs6bMTE",
        "eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCIsImtpZCI6InIifQ.eyJzdWIiOiJhbGljZSIsImV4cCI6NDAwMDAwMDAwMCwibmJmIjoxMDAwMDAwMDAwLCJpc3MiOiJodHRwczovL2lzc3Vlci5leGFtcGxlIiwiYXVkIjpbInJlZ2lzdHJ5Iiwib3RoZXIiXX0.iiYPxKt4KZLcFBM3h0jfBG9UKYpYkeLH0Od21PG8kPEHVKbwPStvfozAceoN7Jx1yhMnLNhjVP_GRGbR9wktPQisgG2Bw4SnwgwGRcVUrc19SctMxBnKKo8PUPl4XJLe0MtERGCJ7HzMAW63R-MUCw2-CLe8h7pUh6KbwPpf1MfKfJHtBVVlStZWCFJn_6O1efD6lj04gWZUWOvOBdm-SRT91igcoKeHfmzDtZSWwoT3Fc1g-dEUGIYV-5UVwzSJDVPAXumaWPf2BVJcpp-SLjLsDY42yFGEwzRtoO1E5yhcWEaHDJgEfNyjtUmslUyvvo1vdcWl2XQN60171dSzLg",
        "eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJib2IiLCJleHAiOjQwMDAwMDAwMDAuNSwiaXNzIjoiaHR0cHM6Ly9pc3N1ZXIuZXhhbXBsZSIsImF1ZCI6InJlZ2lzdHJ5IiwiaWF0IjoxNzAwMDAwMDAwfQ.AqOGhYObnSHLCX0vV4FWOsdLBIhZ_YAxKcDj6eXmbqhdFJ7RHuDqM637QoW8LyFgaSxZM8C9gXFPrI_twd7l03IkyDNAqG4B8JJrw-rChBLmOPMK0wgraYQDiarThBNqaQTIwfm6W-QugkdUWXjHqK3IIcPM0b8_UM8BY7y90fNwsUxYvSHBGL81Kvh-P955oMAqXp122AZLw_7Slzh9UJzi7dO8YE8IkqgukX_xXAnr-G_5G6iH-Lziiu9A_dtffzQtcURl-VwnfjwD_CuPVGfMzjLe_yBXiI4G_tUY3i3XNXn3VvkeBDRsDbm7nbu9xcssRjyWx0tIyk6LxRYgJQ",
        "eyJhbGciOiJFUzI1NiIsInR5cCI6IkpXVCIsImtpZCI6ImUifQ.eyJzdWIiOiJhbGljZSIsImV4cCI6NDAwMDAwMDAwMCwibmJmIjoxMDAwMDAwMDAwLCJpc3MiOiJodHRwczovL2lzc3Vlci5leGFtcGxlIiwiYXVkIjpbInJlZ2lzdHJ5Iiwib3RoZXIiXX0.XCv4GkywKrTgvqMBXhRkv3PWE65hnGr29fO9OnqnCmBbUTjWZKlg8JAA-C0zCq2nkEG2kICgrJoU7jbCLb4arA",
        "eyJhbGciOiJFUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJib2IiLCJleHAiOjQwMDAwMDAwMDAuNSwiaXNzIjoiaHR0cHM6Ly9pc3N1ZXIuZXhhbXBsZSIsImF1ZCI6InJlZ2lzdHJ5IiwiaWF0IjoxNzAwMDAwMDAwfQ.y3esMNEoc-6pTdBOKjQpvVLzUTBFhHdQcDLnTHK8XWSAS8ZBULpJnoGq3eX_xGJnNFsMbiwDeGRZkqYyzXFtgw",
    ]

    static let signedInputs = Set(signedTokens.map(signingInput))

    static let verifiers: [JWTVerifier] = {
        let jwks = try! JWKSet(json: Array(jwksText.utf8))
        var strict = JWTConfiguration(hs256Secret: secret, jwks: jwks, issuer: "https://issuer.example", audience: "registry")
        strict.cacheCapacity = 64
        var open = JWTConfiguration(hs256Secret: secret, jwks: jwks)
        open.cacheCapacity = 0
        return [JWTVerifier(configuration: strict), JWTVerifier(configuration: open)]
    }()

    static let keyless = JWTVerifier(configuration: JWTConfiguration())

    static func signingInput(_ token: String) -> Substring {
        token.lastIndex(of: ".").map { token[..<$0] } ?? Substring(token)
    }

    static func run(_ bytes: [UInt8]) -> [String] {
        var check = FuzzCheck()
        let token = String(decoding: bytes, as: UTF8.self)
        for verifier in verifiers {
            if case .success = verifier.verify(token, now: now) {
                check.expect(signedInputs.contains(signingInput(token)), "a token nobody signed verifies: \(token)")
            }
        }
        if case .success = keyless.verify(token, now: now) {
            check.expect(false, "a verifier without keys accepts: \(token)")
        }
        _ = CompactJWS.parse(token)
        if let value = JOSEJSON.parse(bytes) {
            _ = value.numericDate
            if let claims = value.objectValue {
                _ = ClaimCheck(issuer: "i", audience: "a", leewaySeconds: 60).check(claims, now: now)
            }
        }
        _ = try? JWKSet(json: bytes)
        if let decoded = Base64URL.decode(bytes) {
            let encoded = Base64URL.encode(decoded)
            check.expect(Array(encoded.utf8) == bytes, "strict base64url has a second spelling: \(token) → \(encoded)")
        }
        if let decoded = JOSEBase64URL.decode(bytes) {
            let encoded = Base64URL.encode(decoded)
            var unpadded = bytes[...]
            while unpadded.last == UInt8(ascii: "=") { unpadded = unpadded.dropLast() }
            check.expect(Array(encoded.utf8) == Array(unpadded), "JWT's base64url has a second spelling: \(token) → \(encoded)")
        }
        check.expect(Base64URL.decode(Base64URL.encode(bytes)) == bytes, "base64url does not round-trip \(bytes)")
        return check.violations
    }
}
