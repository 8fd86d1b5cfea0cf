import RegistryLMDB
import RegistryTestSupport

/// Every store of this suite is a PostgreSQL store on the test server
/// (its suites are `.requiresPostgres`), whichever backend the contract
/// suite runs on.
func makeStore(maxDevicesPerUser: Int = 20,
               configure: (inout LMDBRegistryStore.Configuration) -> Void = { _ in }) throws -> StoreFixture {
    guard let postgres = TestBackend.postgres else { preconditionFailure("a PostgreSQL suite ran without REGISTRY_TEST_POSTGRES_URL") }
    return try RegistryTestSupport.makeStore(maxDevicesPerUser: maxDevicesPerUser, on: postgres, configure: configure)
}
