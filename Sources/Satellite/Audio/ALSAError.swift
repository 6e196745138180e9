// Every ALSA call that fails becomes one of these, carrying the C function's
// name, its negative error code and the device, so a journal line says exactly
// which call on which device failed. ALSA's codes are negative errnos; keep
// them as ALSA returned them, snd_strerror expects that.
import CALSA

/// A failed ALSA call: which function, on which device, and ALSA's code.
public struct ALSAError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The C function that failed, e.g. `snd_pcm_open`.
    public var function: String
    /// ALSA's (negative) error code, e.g. -2 for "No such file or directory".
    public var code: Int32
    /// The PCM name as the configuration gives it, e.g. `default` or `hw:1,0`.
    public var device: String

    public init(function: String, code: Int32, device: String) {
        self.function = function
        self.code = code
        self.device = device
    }

    /// ALSA's own words for the code, with nothing added.
    public var reason: String { String(cString: snd_strerror(code)) }

    /// `snd_pcm_open("testmic"): No such file or directory`
    public var description: String { "\(function)(\"\(device)\"): \(reason)" }
}

extension ALSAError {
    /// Throws when an ALSA call returned a negative code; returns the result otherwise.
    @discardableResult
    static func check<Result: BinaryInteger>(_ result: Result, _ function: String, _ device: String) throws(ALSAError) -> Result {
        if result < 0 { throw ALSAError(function: function, code: Int32(truncatingIfNeeded: result), device: device) }
        return result
    }
}
