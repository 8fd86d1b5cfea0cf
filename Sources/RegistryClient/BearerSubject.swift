import Foundation

/// Whether a credential may be used for a user's sign-out.
///
/// After a sign-out or an account switch, an app's credential provider may
/// already answer for the next user; a delete sent with that JWT would delete
/// the next user's registration of this device. A JWT whose `sub` names
/// another user is therefore not used; a credential that is not a readable
/// JWT (an opaque token) cannot be checked and is used as it is.
enum BearerSubject {
    static func allows(_ bearer: String, for userId: String) -> Bool {
        let parts = bearer.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let payload = base64URLDecode(parts[1]),
              let claims = try? JSONSerialization.jsonObject(with: payload) as? [String: Any],
              let subject = claims["sub"] as? String else { return true }
        return subject == userId
    }

    private static func base64URLDecode(_ text: Substring) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        return Data(base64Encoded: base64)
    }
}
