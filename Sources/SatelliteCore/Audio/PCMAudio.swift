// Audio as the satellite holds it between the WAV codec and the ALSA devices:
// 16-bit samples, interleaved. Every reply layout is converted to this once.

/// Interleaved signed 16-bit samples at a sample rate.
public struct PCMAudio: Sendable, Equatable {
    public var sampleRate: Int
    public var channels: Int
    /// Interleaved: frame 0 channel 0, frame 0 channel 1, …
    public var samples: [Int16]

    public init(sampleRate: Int, channels: Int, samples: [Int16]) {
        self.sampleRate = sampleRate
        self.channels = channels
        self.samples = samples
    }

    public var frameCount: Int { channels > 0 ? samples.count / channels : 0 }

    /// How long it plays.
    public var duration: Duration { .milliseconds(frameCount * 1000 / max(sampleRate, 1)) }
}
