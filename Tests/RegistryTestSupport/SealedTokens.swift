import RegistryCore

/// Distinctive tokens of every kind: any copy of them in a file is a leak,
/// not chance.
package enum SealedTokens {
    package static let push = String(repeating: "5ea1ed70", count: 8)
    package static let pushToStart = String(repeating: "decafbad", count: 8)
    package static let activity = String(repeating: "facefeed", count: 8)
    package static let fcm = "fcm-sealed:Zq7Xw_Token.Plain-Text-42"

    package static var all: [String] { [push, pushToStart, activity, fcm] }
}

/// A store holding the distinctive tokens in every kind of slot: alice/d1's
/// push (sent in uppercase), push-to-start and activity ("m", app
/// com.example.a) tokens, and bob/d2's FCM token.
package func makeSealedStore() async throws -> StoreFixture {
    let f = try makeStore()
    _ = try await f.store.registerDevice(DeviceRegistration(userId: "alice", deviceId: "d1",
                                                            pushToken: .set(SealedTokens.push.uppercased())))
    _ = try await f.store.registerPushToStartToken(PushToStartRegistration(userId: "alice", deviceId: "d1",
                                                                           token: SealedTokens.pushToStart))
    _ = try await f.store.registerActivityToken(ActivityTokenRegistration(
        activityId: "m", userId: "alice", deviceId: "d1", token: SealedTokens.activity, appId: "com.example.a"))
    _ = try await f.store.registerDevice(DeviceRegistration(userId: "bob", deviceId: "d2",
                                                            pushToken: .set(SealedTokens.fcm), platform: .fcm))
    return f
}
