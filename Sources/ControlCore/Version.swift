// One place for the version both programs print.

public enum SatelliteVersion {
    public static let satellite = "0.1.0"
    /// The version of Parlour's client contract this build speaks (parlour-protocol.md).
    public static let parlourProtocol = "1"
}
