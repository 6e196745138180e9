// libFuzzer target: SiblingClaims.receive on any datagram a device on the
// network might send the arbitration port. The first byte picks how the rest
// is sent: odd, with its last 32 bytes replaced by the house key's tag, so that
// well-formed claims get past the tag and on to the replay tracker and the
// decision; even, as it is. A datagram is read or refused with a reason; one
// read decodes to a claim that encodes to the same bytes, is at most 512 bytes,
// and the second time is a duplicate (uncounted) at once, a replay a second on.
@testable import SatelliteCore

let keys = HouseKeys(token: "fuzz-token")

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let input = Array(UnsafeBufferPointer(start: start, count: count))
    guard let mode = input.first else { return 0 }
    var datagram = Array(input.dropFirst())
    if mode & 1 == 1, datagram.count >= 32 {
        let body = Array(datagram.dropLast(32))
        datagram = body + SHA256.hmac(key: keys.claimKey, body)
    }
    var claims = SiblingClaims(keys: keys, freshnessMs: 1_000)
    let arrival = UInt64(mode) << 56
    switch claims.receive(datagram, arrivedMs: arrival) {
    case .failure:
        guard claims.refused.values.reduce(0, +) == 1 else { fatalError("a refusal was not counted") }
    case .success(let heard):
        guard datagram.count <= SiblingClaim.maxBytes else { fatalError("read a datagram over 512 bytes") }
        guard heard.claim.encoded(key: keys.claimKey) == datagram else { fatalError("the claim does not encode back") }
        guard claims.receive(datagram, arrivedMs: arrival) == .failure(.duplicate), claims.refused.isEmpty else {
            fatalError("took a claim twice, or counted its copy")
        }
        guard claims.receive(datagram, arrivedMs: arrival + SiblingClaims.duplicateMs + 1) == .failure(.replayed) else {
            fatalError("took a claim twice")
        }
        let own = HeardClaim(claim: SiblingClaim(house: keys.house, session: 0, sequence: 1, levelDb: -30, probability: 0.9,
                                                 ageMs: 0, name: "own", room: ""), wakeMs: heard.wakeMs)
        if heard.claim == own.claim { return 0 }
        var window = ArbitrationWindow(own: own, siblings: [heard.claim.name], windowMs: 200)
        guard let decision = window.heard(heard), decision.won != (decision.winner == heard.claim),
              decision == Arbitration.decide(own: own, claims: [heard], windowMs: 200)
        else { fatalError("the decision is not the one Arbitration makes") }
    }
    return 0
}
