import Foundation
import Testing
@testable import ControlCore
@testable import SatelliteCore

/// The awake sound plays into a real microphone as listening starts: it is kept in the
/// recording, but must not be taken for the person starting to speak.
@Suite("endpointing over the awake sound")
struct EndpointerAwakeSoundTests {
    let settings = Endpointer.Settings(ignoreOnsetMs: 410)
    /// The room before the sound reaches the microphone (the speaker's buffer), then the sound.
    var awake: [Int16] { Signal.silence(100) + Signal.tone(160, hz: 1_000, dBFS: -20) }

    @Test("the awake sound alone is not speech: nothing heard at the leading deadline")
    func soundAlone() {
        let run = EndpointerRun(awake + Signal.silence(4_000), settings: settings)
        #expect(run.decision == .nothingHeard)
        #expect(run.finalAtMs == 2_500)
        // Without the window the same sound would have started an utterance and ended it 800 ms later.
        #expect(EndpointerRun(awake + Signal.silence(4_000)).decision == .ended(.silence))
    }

    @Test("speech that begins over the sound starts just after the window and is not cut")
    func speechOverSound() {
        let speech = Signal.silence(100) + Signal.tone(1_500, dBFS: -25)
        let run = EndpointerRun(Signal.mix(awake, speech) + Signal.silence(3_000), settings: settings)
        #expect(run.decision == .ended(.silence))
        #expect(run.finalAtMs == 100 + 1_500 + 800)
        // Four voiced frames after the window, to the 20 ms frame.
        #expect((480...500).contains(run.speechAtMs ?? 0), "speech at \(run.speechAtMs ?? -1) ms")
    }

    @Test("speech after the sound is heard as usual")
    func speechAfter() {
        let run = EndpointerRun(awake + Signal.silence(840) + Signal.tone(600) + Signal.silence(3_000), settings: settings)
        #expect(run.decision == .ended(.silence))
        #expect(run.finalAtMs == 100 + 160 + 840 + 600 + 800)
    }
}
