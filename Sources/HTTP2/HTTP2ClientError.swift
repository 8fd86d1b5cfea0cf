/// Why an `HTTP2Client` could not be made: its configuration, or a libcurl
/// that cannot serve it.
public struct HTTP2ClientError: Error, Equatable, CustomStringConvertible {
    public let message: String
    public var description: String { message }

    public init(message: String) { self.message = message }
}
