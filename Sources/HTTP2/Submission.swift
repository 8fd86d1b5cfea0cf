/// A request and who to tell how it ended, as `send` hands it to the
/// client's thread.
struct Submission: Sendable {
    let request: HTTP2Request
    let completion: @Sendable (HTTP2Result) -> Void
}
