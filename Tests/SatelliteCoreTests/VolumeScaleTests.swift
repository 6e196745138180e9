// The percentage a person says and the raw value a mixer control holds, and
// which card and control `parlourctl volume` turns for a given config.
import Testing
@testable import ControlCore
@testable import SatelliteCore

@Suite("Volume: percent and mixer selection")
struct VolumeScaleTests {
    @Test("percentages map linearly onto the raw range, ends included", arguments: [
        (0, 255, 0, 0), (0, 255, 100, 255), (0, 255, 50, 128), (0, 87, 40, 35), (0, 87, 50, 44),
        (-10239, 400, 0, -10239), (-10239, 400, 100, 400), (-10239, 400, 50, -4919),
        (0, 87, -5, 0), (0, 87, 140, 87),
    ])
    func raw(min: Int, max: Int, percent: Int, raw: Int) throws {
        #expect(try #require(VolumeScale(min: min, max: max)).raw(percent: percent) == raw)
    }

    @Test("every percentage reads back as itself when the control has at least 100 steps", arguments: [(0, 100), (0, 255), (-10239, 400), (0, 65536)])
    func roundTrip(min: Int, max: Int) throws {
        let scale = try #require(VolumeScale(min: min, max: max))
        for percent in 0...100 { #expect(scale.percent(raw: scale.raw(percent: percent)) == percent) }
    }

    @Test("raw values outside the range are clamped, and an empty range is refused")
    func edges() throws {
        let scale = try #require(VolumeScale(min: 0, max: 87))
        #expect(scale.percent(raw: 200) == 100)
        #expect(scale.percent(raw: -3) == 0)
        #expect(scale.percent(raw: 44) == 51)
        #expect(VolumeScale(min: 5, max: 5) == nil)
        #expect(VolumeScale(min: 5, max: 0) == nil)
    }

    @Test("the mixer card is the card audio.output plays on, unless audio.mixerCard names one", arguments: [
        ("default", "", "default"), ("plughw:1,0", "", "hw:1"), ("hw:0", "", "hw:0"),
        ("hw:CARD=Device,DEV=0", "", "hw:Device"), ("plughw:CARD=\"USB Audio\",DEV=0", "", "hw:USB Audio"),
        ("sysdefault:CARD=Headphones", "", "hw:Headphones"), ("dmix:1", "", "hw:1"), ("dmix", "", "default"),
        ("speaker", "", "default"), ("testspeaker:FILE=\"/tmp/x\"", "", "default"), ("plughw:1,0", "hw:2", "hw:2"),
        (" plughw:3 ", " ", "hw:3"),
    ])
    func card(output: String, mixerCard: String, card: String) {
        #expect(MixerSelection.card(output: output, mixerCard: mixerCard) == card)
    }

    @Test("Master falls back to PCM, Speaker and Headphone; any other name stands alone")
    func candidates() {
        #expect(MixerSelection.candidates(control: "Master") == ["Master", "PCM", "Speaker", "Headphone"])
        #expect(MixerSelection.candidates(control: "Digital") == ["Digital"])
    }
}
