// The decision from a streaming model's output: its last `size` probabilities
// averaged and compared with the cutoff, as microWakeWord's models are meant to be
// read (pymicro-wakeword, ESPHome). Until `size` probabilities have come the
// average counts as 0, so a model just started cannot wake on its first guess.
public struct WakeWordWindow: Sendable {
    public let size: Int
    public let cutoff: Double
    private var recent: [Double] = []

    public init(size: Int, cutoff: Double) {
        precondition(size >= 1)
        self.size = size
        self.cutoff = cutoff
    }

    /// Takes the model's next probability; returns the average it makes.
    public mutating func add(_ probability: Double) -> Double {
        recent.append(probability)
        if recent.count > size { recent.removeFirst() }
        guard recent.count == size else { return 0 }
        return recent.reduce(0, +) / Double(size)
    }

    /// Whether an average means the word was said: strictly above the cutoff, as the reference.
    public func heard(_ average: Double) -> Bool { average > cutoff }

    /// Forgets the probabilities, as after a wake or when the model is reset.
    public mutating func reset() { recent.removeAll() }
}
