import RegistryCore
import Testing
@testable import RegistryHTTP

/// `registryd import` reads what `export` wrote, and refuses any line the
/// API itself could not have written, naming the line and the field.
@Suite struct ExportFormatTests {
    private static let token = String(repeating: "ab", count: 32)

    /// A valid device line with `overrides` spliced over its members.
    private func deviceLine(_ overrides: String = "") -> [UInt8] {
        let base = #""userId": "alice", "deviceId": "d1", "platform": "apns", "environment": "production", "osVersion": "18.2", "appVersion": null, "createdAt": 1796209445123, "lastSeenAt": 1796209445123, "sequence": 4, "pushToken": {"token": "\#(Self.token)", "environment": "production", "updatedAt": 1796209445123}, "pushToStartToken": null, "activityTokens": [{"activityId": "m1", "token": "\#(Self.token)", "environment": "sandbox", "updatedAt": 1796209445123}]"#
        let members = overrides.isEmpty ? base : base + ", " + overrides
        return Array(#"{"device": {\#(members)}}"#.utf8)
    }

    private func refusal(_ line: [UInt8]) -> ExportFormat.LineError? {
        do {
            _ = try ExportFormat.decode(line, line: 7)
            return nil
        } catch let error as ExportFormat.LineError {
            return error
        } catch {
            Issue.record("unexpected \(error)")
            return nil
        }
    }

    @Test func aValidLineRoundTrips() throws {
        let record = try ExportFormat.decode(deviceLine(), line: 1)
        #expect(try ExportFormat.decode(ExportFormat.encode(record), line: 1) == record)
    }

    @Test(arguments: [
        (#""lastSeenAt": -9223372036854775800"#, "lastSeenAt"),
        (#""createdAt": 253402300800000"#, "createdAt"),
        (#""userId": """#, "userId"),
        (#""deviceId": "a/b""#, "deviceId"),
        (#""osVersion": "\#(String(repeating: "x", count: 33))""#, "osVersion"),
        (#""appVersion": "e\#(String(repeating: "\\u0301", count: 20))""#, "appVersion"),
        (#""pushToken": {"token": "zz", "environment": "production", "updatedAt": 1}"#, "pushToken.token"),
        (#""pushToStartToken": {"token": "abc", "environment": "production", "updatedAt": 1}"#, "pushToStartToken.token"),
        (#""activityTokens": [{"activityId": "m1", "token": "zz", "environment": "production", "updatedAt": 1}]"#, "token"),
        (#""activityTokens": [{"activityId": "", "token": "\#(token)", "environment": "production", "updatedAt": 1}]"#, "activityId"),
        (#""activityTokens": [{"activityId": "m", "token": "\#(token)", "environment": "production", "updatedAt": -1}]"#, "updatedAt"),
        (#""platform": "webpush""#, "platform"),
        (#""sequence": -1"#, "sequence"),
    ])
    func aLineOutsideTheAPIsRulesIsRefusedNamingItsField(_ override: String, _ field: String) {
        // JSON keeps the last of a repeated member, so the override wins.
        let error = refusal(deviceLine(override))
        #expect(error?.line == 7)
        #expect(error?.field == field, "\(String(describing: error))")
    }

    @Test func aTombstoneWithAnImplausibleTimeIsRefused() {
        let line = Array(#"{"tombstone": {"userId": "u", "deviceId": "d", "sequence": 3, "deletedAt": -1}}"#.utf8)
        #expect(refusal(line)?.field == "deletedAt")
    }

    @Test func anFCMPushTokenKeepsItsCaseAndAnAPNsOneIsLowercased() throws {
        let fcm = try ExportFormat.decode(deviceLine(#""platform": "fcm", "pushToken": {"token": "AbC:1", "environment": "production", "updatedAt": 5}"#), line: 1)
        guard case .device(let d, _) = fcm else { Issue.record("not a device"); return }
        #expect(d.pushToken?.token == "AbC:1")
        let apns = try ExportFormat.decode(deviceLine(#""pushToken": {"token": "\#(Self.token.uppercased())", "environment": "production", "updatedAt": 5}"#), line: 1)
        guard case .device(let a, _) = apns else { Issue.record("not a device"); return }
        #expect(a.pushToken?.token == Self.token)
    }
}
