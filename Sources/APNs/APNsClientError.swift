/// Why an `APNsClient` could not be made: its configuration, or a libcurl
/// that cannot serve it.
public struct APNsClientError: Error, Equatable, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}
