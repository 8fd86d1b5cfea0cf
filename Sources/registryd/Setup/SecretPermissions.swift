import SecretFiles

extension Settings {
    /// Refuses, before `serve` writes anything (the lock file, a generated
    /// secret, the store), a secret file it reads only later that group or
    /// others may access: the token key file, and the secrets an earlier
    /// start generated in `DIR/secrets`. The files `--jwt-hs256-secret-file`,
    /// `--internal-api-key-file` and the providers' flags name are read,
    /// and so checked, before that already.
    func refuseSecretFilesOpenToOthers() throws(Arguments.Failure) {
        let files = [("token-key-file", tokenKeyFilePath)]
            + Secrets.generatedNames.map { ("data-dir", secretsDirectory + "/" + $0) }
        for (flag, path) in files {
            do {
                try SecretFile.checkPrivate(path)
            } catch {
                throw Arguments.Failure(description: "--\(flag): \(error)")
            }
        }
    }
}
