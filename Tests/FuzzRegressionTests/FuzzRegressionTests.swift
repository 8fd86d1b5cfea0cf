import Foundation
import Testing

/// Replays every checked-in fuzz input through the harness its libFuzzer
/// target runs (`Harness/`), under plain `swift test`: the seed corpora
/// (`tools/fuzz-targets/seeds/<target>/`) and every finding kept as a
/// regression (`Tests/FuzzRegressions/<target>/`). An input must break no
/// property of its harness and must not crash: each decoder answers with
/// its normal error.
@Suite struct FuzzRegressionTests {
    /// Target names as `tools/fuzz` knows them, with their harnesses.
    static let targets: [String: @Sendable ([UInt8]) -> [String]] = [
        "json": JSONFuzz.run,
        "jwt": JWTFuzz.run,
        "routing": RoutingFuzz.run,
        "stored-values": StoredValuesFuzz.run,
        "export-line": ExportLineFuzz.run,
        "timestamps": TimestampsFuzz.run,
    ]

    static let repository = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func inputs(_ target: String) -> [URL] {
        ["tools/fuzz-targets/seeds", "Tests/FuzzRegressions"].flatMap { folder in
            let directory = repository.appendingPathComponent(folder).appendingPathComponent(target)
            let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
            return names.filter { !$0.hasPrefix(".") }.sorted().map { directory.appendingPathComponent($0) }
        }
    }

    @Test(arguments: ["json", "jwt", "routing", "stored-values", "export-line", "timestamps"])
    func everyKeptInputPasses(target: String) throws {
        let harness = try #require(Self.targets[target])
        let files = Self.inputs(target)
        #expect(!files.isEmpty, "no seeds for \(target)")
        for file in files {
            let bytes = [UInt8](try Data(contentsOf: file))
            let violations = harness(bytes)
            #expect(violations.isEmpty, "\(target)/\(file.lastPathComponent): \(violations)")
        }
    }

    /// The folders `tools/fuzz` reads and this suite replays stay in step.
    @Test func everyTargetHasAnEntryPointAndSeeds() throws {
        let entries = try FileManager.default.contentsOfDirectory(
            atPath: Self.repository.appendingPathComponent("tools/fuzz-targets").path)
            .filter { $0.hasSuffix(".swift") && $0 != "FuzzEntry.swift" }
            .map { String($0.dropLast(".swift".count)) }
        #expect(Set(entries) == Set(Self.targets.keys))
    }

    /// The JWT harness's own fixtures verify, so its forgery check is live.
    @Test func jwtFixturesVerify() {
        for token in JWTFuzz.signedTokens {
            for verifier in JWTFuzz.verifiers {
                #expect((try? verifier.verify(token, now: JWTFuzz.now).get())?.subject != nil, "\(token)")
            }
        }
    }
}
