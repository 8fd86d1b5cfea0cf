extension Duration {
    /// The duration in seconds, as a `Double` (for metrics, logs, rates and
    /// `Thread.sleep`): the one conversion every target uses.
    public var inSeconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
