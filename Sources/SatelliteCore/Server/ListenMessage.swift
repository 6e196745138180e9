// The JSON text messages of the /listen socket (parlour-protocol.md, section 2),
// read and written without any socket, so every odd message a server might send
// is tested here. Easy to get wrong: the 4 KiB bound counts UTF-8 bytes, not
// characters, and a message with a type we do not know is not an error.

/// A text message from the server on `/listen`.
public enum ListenMessage: Sendable, Equatable {
    /// The first message: the audio the server expects, and the mode it took from the URL.
    case ready(sampleRate: Int, frameSamples: Int, mode: ListenMode)
    /// The server's turn state; the second `thinking` of a turn carries the transcript.
    case state(ListenState, text: String?)
    /// The answer; one binary message holding the WAV follows it.
    case reply(text: String, via: String)
    /// The server heard its wake word: stop playing now.
    case stop
    /// A message with a type this satellite does not know; the caller logs it and goes on.
    case unknown(type: String)

    /// The largest text message either side accepts, in UTF-8 bytes (the server ignores longer ones).
    public static let maxTextBytes = 4096

    /// Reads one text message from the server.
    public static func decode(_ text: String) throws(ListenMessageError) -> ListenMessage {
        let bytes = text.utf8.count
        guard bytes <= maxTextBytes else {
            throw ListenMessageError("the message is \(bytes) bytes, over 4 KiB")
        }
        let value: JSONValue
        do {
            value = try JSONValue.parse(text)
        } catch {
            throw ListenMessageError("the message is not JSON: \(error.description)")
        }
        guard let fields = value.objectValue else {
            throw ListenMessageError("the message is \(value.kindName), not a JSON object")
        }
        guard let typeValue = fields["type"] else { throw ListenMessageError("the message has no \"type\"") }
        guard let type = typeValue.stringValue else {
            throw ListenMessageError("\"type\" is \(typeValue.kindName), not a string")
        }
        let reader = FieldReader(type: type, fields: fields)
        switch type {
        case "ready":
            let modeText = try reader.string("mode")
            guard let mode = ListenMode(rawValue: modeText) else {
                throw ListenMessageError("ready: \"mode\" is \"\(modeText)\", not wake or push")
            }
            return .ready(sampleRate: try reader.int("sampleRate"), frameSamples: try reader.int("frameSamples"), mode: mode)
        case "state":
            let valueText = try reader.string("value")
            guard let state = ListenState(rawValue: valueText) else {
                throw ListenMessageError("state: \"value\" is \"\(valueText)\", not idle, listening, thinking or speaking")
            }
            return .state(state, text: try reader.optionalString("text"))
        case "reply":
            return .reply(text: try reader.string("text"), via: try reader.string("via"))
        case "stop":
            return .stop
        default:
            return .unknown(type: type)
        }
    }
}

/// The server's turn state, as `state` messages name it.
public enum ListenState: String, Sendable, CaseIterable {
    case idle, listening, thinking, speaking
}

/// A control message from the satellite on `/listen`.
public enum ListenCommand: String, Sendable, CaseIterable {
    /// Begin buffering an utterance.
    case start
    /// The utterance is over: send it to speech-to-text.
    case end
    /// Drop the buffered utterance.
    case cancel
    /// Playback of the reply has finished.
    case spoke

    /// The message as sent, for example `{"type":"start"}`.
    public var text: String { JSONValue.object(["type": .string(rawValue)]).text }
}

/// A server message that could not be read, saying what was wrong with it.
public struct ListenMessageError: Error, Equatable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// Reads typed fields of one message, naming the message and the field in its errors.
private struct FieldReader {
    let type: String
    let fields: [String: JSONValue]

    func string(_ key: String) throws(ListenMessageError) -> String {
        guard let value = try optionalString(key) else { throw ListenMessageError("\(type): \"\(key)\" is missing") }
        return value
    }

    func optionalString(_ key: String) throws(ListenMessageError) -> String? {
        guard let value = fields[key], !value.isNull else { return nil }
        guard let string = value.stringValue else {
            throw ListenMessageError("\(type): \"\(key)\" is \(value.kindName), not a string")
        }
        return string
    }

    func int(_ key: String) throws(ListenMessageError) -> Int {
        guard let value = fields[key] else { throw ListenMessageError("\(type): \"\(key)\" is missing") }
        guard let int = value.intValue else {
            let shown = value.numberValue == nil ? value.kindName : value.text
            throw ListenMessageError("\(type): \"\(key)\" is \(shown), not a whole number")
        }
        return int
    }
}
