// libFuzzer target: a `_parlour-satellite._udp` record as Bonjour gives it, from
// anything on the network. The input is the instance name, then the TXT record's
// strings, each after a NUL. A record is read or refused, never a crash; one read
// holds 16 bytes of house and a name and room a satellite could have written,
// and writes back to a record that reads the same.
@testable import SatelliteCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let parts = UnsafeBufferPointer(start: start, count: count).split(separator: 0, omittingEmptySubsequences: false)
        .map { String(decoding: $0, as: UTF8.self) }
    guard let name = parts.first else { return 0 }
    let txt = DiscoveredServer.txtRecord(Array(parts.dropFirst()))
    guard let advert = SiblingAdvert.decode(name: name, txt: txt) else { return 0 }
    guard advert.house.count == 16, !advert.name.isEmpty, advert.name.utf8.count <= SiblingClaim.maxTextBytes,
          advert.room.utf8.count <= SiblingClaim.maxTextBytes
    else { fatalError("read a record no satellite writes") }
    guard SiblingAdvert.decode(name: advert.name, txt: DiscoveredServer.txtRecord(advert.txt)) == advert
    else { fatalError("the record does not read back the same") }
    return 0
}
