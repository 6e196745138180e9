// libFuzzer target: ConfigLoader.decode on any satellite.json. A file it
// accepts, written back as the config's own JSON, must load to the same
// config with no warnings (so the checks and the normalising agree).
@testable import SatelliteCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let data = start.map { Array(UnsafeBufferPointer(start: $0, count: count)) } ?? []
    guard let loaded = try? ConfigLoader.decode(data, file: "satellite.json", hostName: "den.local") else { return 0 }
    let again = try? ConfigLoader.decode(loaded.config.json().data, file: "satellite.json", hostName: "den.local")
    guard again == LoadedConfig(config: loaded.config, warnings: []) else {
        fatalError("the config written back as JSON loads differently: \(loaded.config.json().text)")
    }
    return 0
}
