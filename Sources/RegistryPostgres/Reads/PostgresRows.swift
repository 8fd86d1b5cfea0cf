import RegistryCore
import Postgres

/// How the PostgreSQL store's rows become the store's values, in one place
/// for the writer and the reads: the column lists and their decoding.
enum PostgresRows {
    /// The device columns, in the order `deviceValue` reads them.
    static let deviceColumns = deviceColumnNames.joined(separator: ", ")

    /// `deviceColumns` of a table alias (`d.platform, …`).
    static func deviceColumns(of alias: String) -> String {
        deviceColumnNames.map { alias + "." + $0 }.joined(separator: ", ")
    }

    private static let deviceColumnNames = ["platform", "environment", "os_version", "app_version", "created_at",
                                            "last_seen_at", "sequence"]

    /// A device value from `deviceColumns` starting at `column`.
    static func deviceValue(_ r: PostgresResult, _ row: Int, from column: Int, activityCount: Int = 0) throws -> DeviceValue {
        guard let platform = Platform(rawValue: try r.string(row, column) ?? ""),
              let environment = APNsEnvironment(rawValue: try r.string(row, column + 1) ?? "") else {
            throw StoredValueError(what: "device row", reason: "unknown platform or environment")
        }
        return DeviceValue(platform: platform, environment: environment,
                           osVersion: try r.string(row, column + 2), appVersion: try r.string(row, column + 3),
                           createdAt: Timestamp(milliseconds: try r.int64(row, column + 4) ?? 0),
                           lastSeenAt: Timestamp(milliseconds: try r.int64(row, column + 5) ?? 0),
                           sequence: try sequence(r, row, column + 6), activityCount: activityCount)
    }

    /// The device columns' parameters for `value`, as `deviceColumns` orders them.
    static func deviceParameters(_ value: DeviceValue) -> [PostgresValue?] {
        [.text(value.platform.rawValue), .text(value.environment.rawValue), value.osVersion.map { .text($0) },
         value.appVersion.map { .text($0) }, .int64(value.createdAt.milliseconds), .int64(value.lastSeenAt.milliseconds),
         value.sequence.map { .text(String($0)) }]
    }

    /// A `numeric(20,0)` sequence column.
    static func sequence(_ r: PostgresResult, _ row: Int, _ column: Int) throws -> UInt64? {
        guard let text = try r.string(row, column) else { return nil }
        guard let value = UInt64(text) else { throw StoredValueError(what: "sequence", reason: "not an unsigned 64-bit integer") }
        return value
    }

    /// `holder`'s token of `kind` from (sealed, environment, updated_at)
    /// starting at `column`, opened in its slot.
    static func token(_ r: PostgresResult, _ row: Int, from column: Int, _ kind: TokenKind, of holder: TokenHolder,
                      _ vault: TokenVault) throws -> TokenValue {
        guard let sealed = try r.bytes(row, column),
              let environment = APNsEnvironment(rawValue: try r.string(row, column + 1) ?? "") else {
            throw StoredValueError(what: "token row", reason: "no sealed value or an unknown environment")
        }
        return TokenValue(token: try vault.open(sealed, in: TokenSlot(kind, holder)), environment: environment,
                          updatedAt: Timestamp(milliseconds: try r.int64(row, column + 2) ?? 0))
    }

    /// The full record as the contract shows it.
    static func record(_ id: RecordID, _ value: DeviceValue, push: TokenValue?, pushToStart: TokenValue?) -> DeviceRecord {
        DeviceRecord(
            userId: id.user, deviceId: id.device, platform: value.platform, environment: value.environment,
            osVersion: value.osVersion, appVersion: value.appVersion,
            pushToken: push.map { StoredToken(token: $0.token, environment: value.environment, updatedAt: $0.updatedAt) },
            pushToStartToken: pushToStart.map {
                StoredToken(token: $0.token, environment: $0.environment, updatedAt: $0.updatedAt)
            },
            activityCount: value.activityCount, createdAt: value.createdAt, lastSeenAt: value.lastSeenAt,
            sequence: value.sequence, appId: id.app)
    }

    /// The holder a row's (user_id, app_id, device_id) and, for an activity
    /// token, `activity_id` columns name, starting at `column`.
    static func holder(_ r: PostgresResult, _ row: Int, from column: Int, activity activityColumn: Int?) throws -> TokenHolder {
        TokenHolder(id: RecordID(user: try r.string(row, column) ?? "", app: try r.string(row, column + 1) ?? "",
                                device: try r.string(row, column + 2) ?? ""),
                   activityId: try activityColumn.map { try r.string(row, $0) ?? "" })
    }

    /// A `text[]` parameter in PostgreSQL's array literal syntax (every
    /// element quoted, `"` and `\` escaped): many ids in one parameter.
    static func textArray(_ values: [String]) -> PostgresValue {
        var literal = "{"
        for (index, value) in values.enumerated() {
            if index > 0 { literal += "," }
            literal += "\""
            for character in value.unicodeScalars {
                if character == "\"" || character == "\\" { literal += "\\" }
                literal.unicodeScalars.append(character)
            }
            literal += "\""
        }
        return .text(literal + "}")
    }
}
