// One microWakeWord model running: its manifest read, its .tflite loaded into a
// TensorFlow Lite interpreter, its tensors checked against what the front end
// gives and the decision needs, then fed feature frames. The models are streaming:
// they keep their own state between calls, take `stride` new frames a call (3 for
// the shipped four, 30 ms) and give one probability; WakeWordWindow averages them.
// On TensorFlow Lite's own kernels, as pymicro-wakeword runs it. XNNPACK's delegate
// (in the same library) takes a sixth less of the idle ear's CPU, but rounds
// differently: 2 or 3 of the bench corpus's 945 decisions then differed from the
// reference's, each on a clip within 0.005 of its cutoff. Measured and not taken
// (BENCHMARKS.md).
import CTFLite
import SatelliteCore

/// Not Sendable: one owner feeds it, in order.
public final class WakeWordModel {
    public let manifestPath: String
    public let manifest: WakeWordManifest
    /// Frames the model takes a call.
    public let stride: Int
    public let inputQuantisation: WakeWordTensorQuantisation
    public let outputQuantisation: WakeWordTensorQuantisation
    public private(set) var window: WakeWordWindow

    private let library: TFLiteLibrary
    private let modelPath: String
    /// The library it runs on.
    public var libraryPath: String { library.path }
    private let model: OpaquePointer
    private var interpreter: OpaquePointer
    private var input: OpaquePointer
    private var output: OpaquePointer
    private var pending: [UInt8] = []

    /// Loads the model the manifest at `manifestPath` names; `cutoff` overrides the manifest's.
    public init(manifestPath: String, library: TFLiteLibrary, cutoff: Double? = nil) throws(WakeWordModelError) {
        let data: [UInt8]
        do {
            data = try FileSystem.read(manifestPath)
        } catch {
            throw WakeWordModelError(file: manifestPath, problem: "cannot be read (\(error.fileReason))")
        }
        let manifest: WakeWordManifest
        do {
            manifest = try WakeWordManifest.parse(data, file: manifestPath)
        } catch {
            throw WakeWordModelError(file: manifestPath, problem: nil, manifest: error)
        }
        let modelPath = manifest.modelPath(manifestPath: manifestPath)
        guard FileSystem.exists(modelPath) else {
            throw WakeWordModelError(file: modelPath, problem: "does not exist (the model \(manifestPath) names under \"model\")")
        }
        guard let model = library.modelCreateFromFile(modelPath) else {
            throw WakeWordModelError(file: modelPath, problem: "is not a TensorFlow Lite model (expected a microWakeWord .tflite)")
        }
        guard let interpreter = library.interpreterCreate(model, nil) else {
            library.modelDelete(model)
            throw WakeWordModelError(file: modelPath, problem: "cannot be run: TensorFlow Lite made no interpreter for it")
        }
        func fail(_ problem: String) -> WakeWordModelError {
            library.interpreterDelete(interpreter)
            library.modelDelete(model)
            return WakeWordModelError(file: modelPath, problem: problem)
        }
        let inputs = library.interpreterGetInputTensorCount(interpreter)
        let outputs = library.interpreterGetOutputTensorCount(interpreter)
        guard inputs == 1, outputs == 1, let input = library.interpreterGetInputTensor(interpreter, 0),
              let output = library.interpreterGetOutputTensor(interpreter, 0) else {
            throw fail("has \(inputs) input and \(outputs) output tensors; expected 1 of each (a microWakeWord model)")
        }
        let inputShape = Self.shape(input, library)
        let outputShape = Self.shape(output, library)
        let channels = MicroFrontend.channelCount
        guard inputShape.count == 3, inputShape[0] == 1, inputShape[1] >= 1, inputShape[2] == channels else {
            throw fail("takes input \(inputShape); expected [1, frames, \(channels)], \(channels) feature channels a frame")
        }
        guard outputShape.reduce(1, *) == 1 else {
            throw fail("gives output \(outputShape); expected one probability ([1, 1])")
        }
        guard let inputKind = Self.kind(input, library), let outputKind = Self.kind(output, library) else {
            throw fail("has \(Self.typeName(input, library)) input and \(Self.typeName(output, library)) output; "
                + "expected int8 or uint8 (a quantised streaming model)")
        }
        let inputParameters = library.tensorQuantizationParams(input)
        let outputParameters = library.tensorQuantizationParams(output)
        guard inputParameters.scale > 0, outputParameters.scale > 0 else {
            throw fail("has no quantisation scale on its \(inputParameters.scale > 0 ? "output" : "input"); expected a quantised model")
        }
        // After the checks: a model whose shapes do not fit together fails here, less clearly.
        guard library.interpreterAllocateTensors(interpreter) == 0 else {
            throw fail("cannot be run: TensorFlow Lite could not allocate its tensors")
        }
        guard library.tensorByteSize(input) == inputShape[1] * channels, library.tensorByteSize(output) == 1 else {
            throw fail("has tensors of \(library.tensorByteSize(input)) and \(library.tensorByteSize(output)) bytes; "
                + "expected \(inputShape[1] * channels) and 1")
        }

        self.manifestPath = manifestPath
        self.manifest = manifest
        self.library = library
        self.modelPath = modelPath
        self.model = model
        self.interpreter = interpreter
        self.input = input
        self.output = output
        stride = inputShape[1]
        inputQuantisation = WakeWordTensorQuantisation(kind: inputKind, scale: inputParameters.scale, zeroPoint: inputParameters.zero_point)
        outputQuantisation = WakeWordTensorQuantisation(kind: outputKind, scale: outputParameters.scale, zeroPoint: outputParameters.zero_point)
        window = WakeWordWindow(size: manifest.slidingWindowSize, cutoff: cutoff ?? manifest.probabilityCutoff)
        pending.reserveCapacity(stride * channels)
    }

    deinit {
        library.interpreterDelete(interpreter)
        library.modelDelete(model)
    }

    /// Forgets what the model has heard, as after a wake: a streaming model keeps its state in
    /// variables that only a new interpreter starts afresh (pymicro-wakeword reloads the model).
    public func reset() throws(WakeWordModelError) {
        guard let fresh = library.interpreterCreate(model, nil) else {
            throw WakeWordModelError(file: modelPath, problem: "cannot be run again: TensorFlow Lite made no interpreter for it")
        }
        guard library.interpreterAllocateTensors(fresh) == 0, let input = library.interpreterGetInputTensor(fresh, 0),
              let output = library.interpreterGetOutputTensor(fresh, 0) else {
            library.interpreterDelete(fresh)
            throw WakeWordModelError(file: modelPath, problem: "cannot be run again: TensorFlow Lite could not allocate its tensors")
        }
        library.interpreterDelete(interpreter)
        interpreter = fresh
        self.input = input
        self.output = output
        pending.removeAll(keepingCapacity: true)
        window.reset()
    }

    /// Takes one frame from MicroFrontend. Every `stride` frames the model runs and this returns
    /// the averaged probability (0 until the window has filled); between runs, nil.
    public func process(_ frame: [UInt16]) throws(WakeWordModelError) -> Double? {
        precondition(frame.count == MicroFrontend.channelCount)
        for feature in frame { pending.append(inputQuantisation.quantise(feature: feature)) }
        guard pending.count == stride * MicroFrontend.channelCount else { return nil }
        defer { pending.removeAll(keepingCapacity: true) }
        let copied = pending.withUnsafeBytes { library.tensorCopyFromBuffer(input, $0.baseAddress, $0.count) }
        guard copied == 0, library.interpreterInvoke(interpreter) == 0 else {
            throw WakeWordModelError(file: modelPath, problem: "failed to run (TensorFlow Lite's invoke returned an error)")
        }
        var byte: UInt8 = 0
        guard library.tensorCopyToBuffer(output, &byte, 1) == 0 else {
            throw WakeWordModelError(file: modelPath, problem: "gave no output")
        }
        return window.add(outputQuantisation.dequantise(byte))
    }

    /// Whether an average `process` returned means the wake word was said.
    public func heard(_ average: Double) -> Bool { window.heard(average) }

    private static func shape(_ tensor: OpaquePointer, _ library: TFLiteLibrary) -> [Int] {
        (0..<library.tensorNumDims(tensor)).map { Int(library.tensorDim(tensor, $0)) }
    }

    private static func kind(_ tensor: OpaquePointer, _ library: TFLiteLibrary) -> WakeWordTensorQuantisation.Kind? {
        switch Int(library.tensorType(tensor)) {
        case Int(CTFLiteTypeInt8): .int8
        case Int(CTFLiteTypeUInt8): .uint8
        default: nil
        }
    }

    private static func typeName(_ tensor: OpaquePointer, _ library: TFLiteLibrary) -> String {
        let type = library.tensorType(tensor)
        return [1: "float32", 2: "int32", 3: "uint8", 4: "int64", 7: "int16", 9: "int8", 10: "float16"][type] ?? "type \(type)"
    }
}

/// A model that cannot be used, naming the file and what was expected of it.
public struct WakeWordModelError: Error, Equatable, CustomStringConvertible {
    public let file: String
    public let problem: String?
    /// When the manifest itself is wrong: which key and what it must hold.
    public var manifest: WakeWordManifestError?

    init(file: String, problem: String?, manifest: WakeWordManifestError? = nil) {
        self.file = file
        self.problem = problem
        self.manifest = manifest
    }

    public var description: String {
        if let manifest { return manifest.description }
        return "\(file) \(problem ?? "cannot be used")"
    }
}
