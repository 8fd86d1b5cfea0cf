import CGlibcExtras
import Glibc

/// Turns core dumps off for the whole process before anything reads a
/// secret: a dump would hold the token keys, the JWT secret and the internal
/// API key, and lands where the secrets' file modes no longer protect them.
///
/// Two locks, as each covers a gap in the other. `RLIMIT_CORE` 0 (soft and
/// hard, so nothing later in the process raises it) stops a dump to a file,
/// but the kernel does not enforce it when `core_pattern` pipes dumps to a
/// program. `PR_SET_DUMPABLE` 0 stops every dump, and also keeps other
/// processes of the same user from attaching to registryd or reading its
/// memory through `/proc`. It lasts until an exec, and registryd execs nothing.
enum CoreDumps {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// Fails only if the kernel refuses, which it does not for lowering a
    /// limit or for this flag; the caller stops rather than run dumpable.
    static func forbid() throws(Failure) {
        var none = rlimit(rlim_cur: 0, rlim_max: 0)
        guard setrlimit(__rlimit_resource_t(RLIMIT_CORE.rawValue), &none) == 0 else {
            throw Failure(description: "cannot set the core size limit to 0: \(String(cString: strerror(errno)))")
        }
        guard registryd_set_dumpable(0) == 0 else {
            throw Failure(description: "cannot turn core dumps off (prctl PR_SET_DUMPABLE): \(String(cString: strerror(errno)))")
        }
    }
}
