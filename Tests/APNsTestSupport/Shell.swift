import Foundation

/// Runs a command (found on PATH) to its end; its standard output, or
/// `nil` when it fails. Blocks: call it through `offThePool`.
@discardableResult
package func shell(_ arguments: [String], input: Data? = nil) -> Data? {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = arguments
    let output = Pipe()
    process.standardOutput = output
    process.standardError = FileHandle.nullDevice
    let stdin = Pipe()
    process.standardInput = stdin
    do { try process.run() } catch { return nil }
    if let input { stdin.fileHandleForWriting.write(input) }
    try? stdin.fileHandleForWriting.close()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return process.terminationStatus == 0 ? data : nil
}

/// A fresh directory under the system's temporary directory.
package func temporaryDirectory() -> String {
    let path = NSTemporaryDirectory() + "apns-tests-" + UUID().uuidString
    try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}
