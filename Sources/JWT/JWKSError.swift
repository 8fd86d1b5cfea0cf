/// A JWKS file that cannot be used, with a message naming the key (its
/// index, and its `kid` when it has one) and the member at fault, so an
/// operator can fix the file from the startup error alone.
public struct JWKSError: Error, Hashable, Sendable, CustomStringConvertible {
    public var message: String

    public init(message: String) {
        self.message = message
    }

    /// A problem with `keys[index]`, named by its `kid` when it has one.
    static func key(_ index: Int, kid: String?, _ problem: String) -> JWKSError {
        let name = kid.map { "keys[\(index)] (kid \"\($0)\")" } ?? "keys[\(index)]"
        return JWKSError(message: "\(name): \(problem)")
    }

    public var description: String { message }
}
