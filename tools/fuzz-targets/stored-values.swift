// harness: StoredValuesFuzz.swift
/// libFuzzer entry point of target `stored-values` (built and run by `tools/fuzz`);
/// what it feeds and checks is in `Tests/FuzzRegressionTests/Harness/StoredValuesFuzz.swift`.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    fuzzEntry(data, size, StoredValuesFuzz.run)
}
