// harness: TimestampsFuzz.swift
/// libFuzzer entry point of target `timestamps` (built and run by `tools/fuzz`);
/// what it feeds and checks is in `Tests/FuzzRegressionTests/Harness/TimestampsFuzz.swift`.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    fuzzEntry(data, size, TimestampsFuzz.run)
}
