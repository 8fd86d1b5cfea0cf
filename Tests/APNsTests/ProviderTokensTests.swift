import APNs
import APNsTestSupport
import RegistrydTestSupport
import Synchronization
import Testing

/// The renewal rules, with a clock the tests move.
@Suite struct ProviderTokensTests {
    final class FakeClock: Sendable {
        private let seconds = Mutex<Int64>(1_700_000_000)
        var now: Int64 { seconds.withLock { $0 } }
        func advance(_ by: Int64) { seconds.withLock { $0 += by } }
    }

    private func tokens(_ clock: FakeClock) async throws -> ProviderTokens {
        let keys = await offThePool { TestKeys.shared }
        return try ProviderTokens(key: ProviderKey(contentsOf: keys.p256), teamId: "TEAM", keyId: "KID", now: { clock.now })
    }

    @Test func renewedAtFortyMinutes() async throws {
        let clock = FakeClock()
        let tokens = try await tokens(clock)
        let first = tokens.current()
        clock.advance(40 * 60 - 1)
        #expect(tokens.current() == first)
        #expect(tokens.renewals == 0)
        clock.advance(1)
        let second = tokens.current()
        #expect(second != first)
        #expect(tokens.current() == second)
        #expect(tokens.renewals == 1)
    }

    @Test func expiredRenewsOnlyATokenAMinuteOld() async throws {
        let clock = FakeClock()
        let tokens = try await tokens(clock)
        let first = tokens.current()
        clock.advance(59)
        #expect(!tokens.expired(first))
        #expect(tokens.current() == first)
        clock.advance(1)
        #expect(tokens.expired(first))
        let second = tokens.current()
        #expect(second != first)
        #expect(tokens.renewals == 1)
        // Other requests that carried the old token report it too: no second renewal.
        clock.advance(120)
        #expect(!tokens.expired(first))
        #expect(tokens.current() == second)
        // The new one, once a minute old, may be renewed again.
        #expect(tokens.expired(second))
        #expect(tokens.renewals == 2)
    }
}
