// The results of push turns (TurnDriver gives them), each handed to the one
// caller waiting for it. A turn can end before its caller has started to wait
// (refused at once, or cancelled while the microphone opened), so a result
// given first is kept until taken.

import SatelliteCore

/// Callers waiting for their turn's result, by turn number.
struct TurnResults {
    private var waiting: [Int: CheckedContinuation<ControlResult, Never>] = [:]
    private var given: [Int: ControlResult] = [:]

    /// Turn `number` ended with `result`.
    mutating func give(_ number: Int, _ result: ControlResult) {
        if let waiter = waiting.removeValue(forKey: number) {
            waiter.resume(returning: result)
        } else {
            given[number] = result
        }
    }

    /// `waiter` is to have turn `number`'s result, now if it has one.
    mutating func wait(for number: Int, _ waiter: CheckedContinuation<ControlResult, Never>) {
        if let result = given.removeValue(forKey: number) {
            waiter.resume(returning: result)
        } else {
            waiting[number] = waiter
        }
    }
}
