// How a microWakeWord model's 8-bit tensors map to real numbers: the input takes
// the front end's features, the output gives a probability, each through the
// tensor's scale and zero point (real = scale * (q - zero point)). The model
// declares int8 or uint8 for each; the shipped four take int8 and give uint8.
public struct WakeWordTensorQuantisation: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        case int8, uint8
        var range: ClosedRange<Double> { self == .int8 ? -128...127 : 0...255 }
    }

    public var kind: Kind
    public var scale: Float
    public var zeroPoint: Int32

    public init(kind: Kind, scale: Float, zeroPoint: Int32) {
        self.kind = kind
        self.scale = scale
        self.zeroPoint = zeroPoint
    }

    /// A feature (MicroFrontend's unit) as the byte the input tensor holds, rounded half to even
    /// as pymicro-wakeword's numpy does. Past the tensor's range it saturates, where the reference's
    /// cast wraps (a full-scale square wave reaches 667, one past the int8 input's top).
    public func quantise(feature: UInt16) -> UInt8 {
        let real = Double(feature) * MicroFrontend.featureUnit
        let q = (real / Double(scale) + Double(zeroPoint)).rounded(.toNearestOrEven)
        let clamped = min(max(q, kind.range.lowerBound), kind.range.upperBound)
        return kind == .int8 ? UInt8(bitPattern: Int8(clamped)) : UInt8(clamped)
    }

    /// The real number an output byte stands for, in single precision as the reference computes it.
    public func dequantise(_ byte: UInt8) -> Double {
        let q = kind == .int8 ? Float(Int8(bitPattern: byte)) : Float(byte)
        return Double((q - Float(zeroPoint)) * scale)
    }
}
