// Why a reply could not be played, said so a person reading the journal knows
// whether the server sent something odd or the answer was cut off on the way.

/// A WAV file the satellite cannot decode, with what is wrong with it.
public enum WAVError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Fewer than 12 bytes, or not `RIFF`…`WAVE`.
    case notWAV
    /// A `data` chunk came before any `fmt ` chunk.
    case missingFormat
    /// The chunks ended without a `data` chunk.
    case missingData
    /// A `fmt ` chunk shorter than its layout needs.
    case formatTooShort(bytes: Int, needed: Int)
    /// A chunk declares more bytes than the file holds.
    case truncated(chunk: String, declared: Int, present: Int)
    /// An encoding the satellite does not decode, named (`"A-law"`, `"12-bit PCM"`).
    case unsupportedEncoding(String)
    case unsupportedChannelCount(Int)
    case unsupportedSampleRate(Int)
    /// `blockAlign` is not `channels × bits / 8`.
    case inconsistentBlockAlign(blockAlign: Int, expected: Int)
    /// The sample bytes do not divide into whole frames.
    case partialFrame(bytes: Int, blockAlign: Int)
    /// A `data` chunk with no frame in it.
    case noFrames

    public var description: String {
        switch self {
        case .notWAV:
            return "The audio is not a WAV file: it does not start with a RIFF header of type WAVE."
        case .missingFormat:
            return "The WAV file has its data chunk before any fmt chunk, so its layout is unknown."
        case .missingData:
            return "The WAV file has no data chunk: it holds no audio."
        case let .formatTooShort(bytes, needed):
            return "The WAV file's fmt chunk is \(bytes) bytes long; its layout needs at least \(needed)."
        case let .truncated(chunk, declared, present):
            return "The WAV file is cut short: its \(chunk) chunk declares \(declared) bytes but only \(present) are there."
        case let .unsupportedEncoding(name):
            return "The WAV file is encoded as \(name); only PCM (8, 16, 24 or 32 bits) and float (32 or 64 bits) can be played."
        case let .unsupportedChannelCount(count):
            return "The WAV file has \(count) channels; 1 to 8 can be played."
        case let .unsupportedSampleRate(rate):
            return "The WAV file's sample rate is \(rate) Hz; 8000 to 192000 Hz can be played."
        case let .inconsistentBlockAlign(blockAlign, expected):
            return "The WAV file's block align is \(blockAlign) bytes, but its channels and bits make a frame \(expected) bytes."
        case let .partialFrame(bytes, blockAlign):
            return "The WAV file's data is \(bytes) bytes, which is not a whole number of \(blockAlign)-byte frames."
        case .noFrames:
            return "The WAV file's data chunk is empty: it holds no audio."
        }
    }
}
