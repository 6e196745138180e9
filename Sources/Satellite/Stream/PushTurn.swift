// One `parlourctl listen` over the /listen socket: what it has sent and heard so
// far, and the one result its caller waits for. Easy to get wrong: the server
// says nothing when it heard nothing or failed (just thinking, then idle), so
// the result must be made from what is known then, and exactly once.
import SatelliteCore

/// A push turn under way on the stream.
struct PushTurn {
    enum Phase: Equatable {
        /// `start` was sent; frames go up until the endpointer (or the holder) ends it.
        case capturing
        /// `end` was sent; waiting for thinking, the transcript, the reply and its WAV.
        case answering
        /// The reply is playing.
        case playing
    }

    let number: Int
    let hold: Bool
    /// Whether the holder of a `--hold` listen let go.
    let released: @Sendable () async -> Bool
    let continuation: CheckedContinuation<ControlResult, Never>
    var endpointer: Endpointer
    var phase = Phase.capturing
    var samples = 0
    var sawThinking = false
    var heard = ""
    var reply: (text: String, via: String)?
    var timeout: Task<Void, Never>?

    /// The result once the reply has played (or there was no audio to play).
    var completed: ControlResult {
        .completed(["heard": .string(heard), "reply": .string(reply?.text ?? ""), "via": .string(reply?.via ?? "")])
    }

    /// The result when the server went idle without a reply: it heard nothing, or it failed and does not say why.
    var silentEnd: ControlResult {
        if heard.isEmpty { return .cancelled(.nothingHeard) }
        return .failure(.serverRefused, "The server heard \u{201C}\(heard)\u{201D} but gave no answer; its own log says why.")
    }
}
