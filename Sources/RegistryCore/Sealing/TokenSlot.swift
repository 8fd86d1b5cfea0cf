import Codecs

/// Where a sealed token lives: its kind and its holder (the record, and the
/// activity for an activity token). `TokenVault` binds every sealed value
/// to its slot (the AEAD's associated data), so a sealed value opens only
/// where it was written: whoever can write a backup or the database without
/// the token keys cannot move their own sealed token into a victim's record
/// (and so receive the victim's pushes, or have theirs sent to them).
///
/// The slot's bytes are the kind byte, then the holder as the LMDB store
/// keys the token: (user, app, device) for push and push-to-start tokens,
/// (activity, user, app, device) for activity tokens, each part length-
/// prefixed (`LengthPrefixed`), with the app as the store names it. So
/// the LMDB store, whose keys are exactly these, builds a slot from the key
/// it read the value under, without decoding it.
package struct TokenSlot: Hashable, Sendable {
    package let kind: TokenKind
    package let bytes: [UInt8]

    /// The slot of a value stored under `key` in `kind`'s database (LMDB).
    package init(_ kind: TokenKind, key: [UInt8]) {
        self.init(kind, bytes: key)
    }

    /// `init(_:key:)` of a key in place (still in the database's map).
    package init(_ kind: TokenKind, key: UnsafeRawBufferPointer) {
        self.init(kind, bytes: key)
    }

    private init(_ kind: TokenKind, bytes key: some Collection<UInt8>) {
        self.kind = kind
        var bytes = [UInt8]()
        bytes.reserveCapacity(1 + key.count)
        bytes.append(kind.rawValue)
        bytes.append(contentsOf: key)
        self.bytes = bytes
    }

    /// The slot of `holder`'s token of `kind`.
    /// Built in one buffer: a lookup makes one per token it opens.
    package init(_ kind: TokenKind, _ holder: TokenHolder) {
        let id = holder.id
        let activity = kind == .activity ? holder.activityId ?? "" : nil
        var bytes: [UInt8] = []
        bytes.reserveCapacity(7 + id.user.utf8.count + id.app.utf8.count + id.device.utf8.count
                              + (activity.map { 2 + $0.utf8.count } ?? 0))
        bytes.append(kind.rawValue)
        if let activity { LengthPrefixed.append(activity, to: &bytes) }
        LengthPrefixed.append(id.user, to: &bytes)
        LengthPrefixed.append(id.app, to: &bytes)
        LengthPrefixed.append(id.device, to: &bytes)
        self.kind = kind
        self.bytes = bytes
    }
}
