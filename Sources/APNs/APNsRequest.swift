/// One push: `POST /3/device/{deviceToken}` on `host`'s APNs.
public struct APNsRequest: Sendable {
    /// The device token, in hex.
    public var deviceToken: String
    public var host: APNsHost
    /// `apns-topic`: the app's bundle ID (with a suffix for some push types).
    public var topic: String
    /// `apns-push-type`: `alert`, `background`, …
    public var pushType: String
    /// `apns-priority`: 10 (at once), 5 or 1.
    public var priority: Int
    /// `apns-expiration`: epoch seconds until which APNs keeps retrying; 0 means once.
    public var expiration: Int64
    /// `apns-collapse-id`, sent only when given.
    public var collapseId: String?
    /// `apns-id`: a UUID the caller picks and sends again on every retry of
    /// this notification, so APNs and the logs can tie the attempts together.
    public var apnsId: String
    /// The JSON payload, sent as given.
    public var payload: [UInt8]

    public init(deviceToken: String, host: APNsHost, topic: String, pushType: String = "alert", priority: Int = 10,
                expiration: Int64 = 0, collapseId: String? = nil, apnsId: String, payload: [UInt8]) {
        self.deviceToken = deviceToken
        self.host = host
        self.topic = topic
        self.pushType = pushType
        self.priority = priority
        self.expiration = expiration
        self.collapseId = collapseId
        self.apnsId = apnsId
        self.payload = payload
    }

    /// Why this request cannot be sent as it is (a token that is not hex, a
    /// header value with a control character), or `nil`.
    var invalidity: String? {
        guard !deviceToken.isEmpty, deviceToken.utf8.allSatisfy({ Self.isHexDigit($0) }) else {
            return "the device token is not hex"
        }
        for (name, value) in [("apns-topic", topic), ("apns-push-type", pushType), ("apns-id", apnsId),
                              ("apns-collapse-id", collapseId ?? "")] where value.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F }) {
            return "\(name) contains a control character"
        }
        return nil
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x46).contains(byte) || (0x61...0x66).contains(byte)
    }
}
