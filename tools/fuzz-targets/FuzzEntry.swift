/// Shared by every libFuzzer entry point in this folder: copies the input,
/// runs the target's harness and traps on the first broken property, so
/// libFuzzer saves the input as a finding. The harnesses live in
/// `Tests/FuzzRegressionTests/Harness/`, where `swift test` replays the
/// seeds and every saved finding through them.
func fuzzEntry(_ data: UnsafePointer<UInt8>?, _ size: Int, _ harness: ([UInt8]) -> [String]) -> CInt {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    if let violation = harness(bytes).first { fatalError("property broken: \(violation)") }
    return 0
}
