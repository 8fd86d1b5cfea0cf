/// Where one delivery (one token of one notification) stands. The meaning of
/// each state is the API's: `delivered` is APNs' 200 (accepted, not seen by a
/// person); `unknown` is an outcome the registry cannot know (a timeout, a
/// connection lost after the request was written, a node that died while
/// sending), never sent again.
public enum DeliveryState: String, Sendable, Hashable, CaseIterable {
    case queued
    case sending
    case delivered
    case failed
    case unknown
    case expired
    case cancelled

    /// A final state never changes again; `queued` and `sending` do.
    public var isFinal: Bool { self != .queued && self != .sending }

    /// One byte in the stored encodings (its index in `allCases`).
    package var code: UInt8 { UInt8(Self.allCases.firstIndex(of: self)!) }

    package init?(code: UInt8) {
        guard Int(code) < Self.allCases.count else { return nil }
        self = Self.allCases[Int(code)]
    }
}

/// How many of a notification's deliveries are in each state.
public struct DeliveryCounts: Sendable, Hashable {
    /// Indexed by `DeliveryState.code`.
    package private(set) var values: [Int]

    public init() { values = Array(repeating: 0, count: DeliveryState.allCases.count) }

    public subscript(state: DeliveryState) -> Int {
        get { values[Int(state.code)] }
        set { values[Int(state.code)] = newValue }
    }

    /// One delivery moved from `old` (nil: a new one) to `new`.
    package mutating func move(from old: DeliveryState?, to new: DeliveryState) {
        if let old { self[old] -= 1 }
        self[new] += 1
    }

    public var total: Int { values.reduce(0, +) }

    /// Every delivery has reached a final state.
    public var isFinished: Bool { self[.queued] == 0 && self[.sending] == 0 }
}
