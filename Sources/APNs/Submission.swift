/// A request and who to tell how it ended, as `send` hands it to the
/// client's thread.
struct Submission: Sendable {
    let request: APNsRequest
    let completion: @Sendable (APNsResult) -> Void
}
