// When the WebSocket client pings and when it gives a server up for dead
// (WebSocketKeepalive), on clock readings given in nanoseconds: at boot and
// a hundred years on.
import Testing
@testable import SatelliteCore

@Suite("WebSocket keepalive")
struct WebSocketKeepaliveTests {
    static let second: UInt64 = 1_000_000_000

    @Test("pings 3 s after the last sign, again every 3 s, and gives up 10 s after the last sign", arguments: [0, 100 * 366 * 86400 * second])
    func silent(start: UInt64) {
        var keepalive = WebSocketKeepalive(heardAt: start, pingAfter: 3 * Self.second, deadAfter: 10 * Self.second)
        let at = { (seconds: Double) in start + UInt64(seconds * Double(Self.second)) }
        #expect(keepalive.step(at: at(2.9), consumerBehind: false) == .wait)
        #expect(!keepalive.awaitingPong)
        #expect(keepalive.step(at: at(3), consumerBehind: false) == .ping)
        #expect(keepalive.awaitingPong)
        #expect(keepalive.deadAt == at(10))
        #expect(keepalive.step(at: at(5.9), consumerBehind: false) == .wait)
        #expect(keepalive.step(at: at(6), consumerBehind: false) == .ping)
        #expect(keepalive.step(at: at(9.9), consumerBehind: false) == .ping)
        #expect(keepalive.step(at: at(10), consumerBehind: false) == .dead)
    }

    @Test("any sign of the server puts the next ping off and forgets the unanswered one")
    func heard() {
        var keepalive = WebSocketKeepalive(heardAt: 0, pingAfter: 3 * Self.second, deadAfter: 10 * Self.second)
        #expect(keepalive.step(at: 3 * Self.second, consumerBehind: false) == .ping)
        keepalive.heard(at: 4 * Self.second)
        #expect(!keepalive.awaitingPong)
        #expect(keepalive.deadAt == nil)
        #expect(keepalive.nextPing == 7 * Self.second)
        #expect(keepalive.step(at: 12 * Self.second, consumerBehind: false) == .ping)
    }

    @Test("a ping that went late, this side held up, still has 7 s to be answered")
    func latePing() {
        var keepalive = WebSocketKeepalive(heardAt: 0, pingAfter: 3 * Self.second, deadAfter: 10 * Self.second)
        #expect(keepalive.step(at: 9 * Self.second, consumerBehind: false) == .ping)
        #expect(keepalive.deadAt == 16 * Self.second)
        #expect(keepalive.step(at: 15 * Self.second, consumerBehind: false) == .ping)
        #expect(keepalive.step(at: 16 * Self.second, consumerBehind: false) == .dead)
    }

    @Test("no server is judged dead while this side's consumer is behind")
    func consumerBehind() {
        var keepalive = WebSocketKeepalive(heardAt: 0, pingAfter: 3 * Self.second, deadAfter: 10 * Self.second)
        #expect(keepalive.step(at: 3 * Self.second, consumerBehind: true) == .ping)
        #expect(keepalive.step(at: 20 * Self.second, consumerBehind: true) == .ping)
        #expect(keepalive.step(at: 20 * Self.second, consumerBehind: true) == .wait)
        #expect(keepalive.step(at: 20 * Self.second, consumerBehind: false) == .dead)
    }
}
