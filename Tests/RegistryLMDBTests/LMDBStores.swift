import RegistryLMDB
import RegistryTestSupport

/// Every store of this suite is an LMDB store, whichever backend the
/// contract suite runs on.
func makeStore(maxDevicesPerUser: Int = 20,
               configure: (inout LMDBRegistryStore.Configuration) -> Void = { _ in }) throws -> StoreFixture {
    try RegistryTestSupport.makeStore(maxDevicesPerUser: maxDevicesPerUser, on: .lmdb, configure: configure)
}
