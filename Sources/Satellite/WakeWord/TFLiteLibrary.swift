// TensorFlow Lite's C library, opened at run time from the path given (the package
// installs it under /usr/lib/parlour-satellite/): only a satellite whose `wake` is
// `local` loads it, so the others never map 4.8 MB of machine learning they do not
// use. Each function the wake word needs is looked up once, here; one that is
// missing means the file is not the library, and the error names the path.
import CTFLite
import Glibc

public final class TFLiteLibrary: @unchecked Sendable { // immutable once open; the C API's calls are reentrant per interpreter
    public let path: String
    private let handle: UnsafeMutableRawPointer

    let version: CTFLiteVersion
    let modelCreateFromFile: CTFLiteModelCreateFromFile
    let modelDelete: CTFLiteModelDelete
    let interpreterCreate: CTFLiteInterpreterCreate
    let interpreterDelete: CTFLiteInterpreterDelete
    let interpreterAllocateTensors: CTFLiteInterpreterAllocateTensors
    let interpreterInvoke: CTFLiteInterpreterInvoke
    let interpreterGetInputTensorCount: CTFLiteInterpreterGetInputTensorCount
    let interpreterGetOutputTensorCount: CTFLiteInterpreterGetOutputTensorCount
    let interpreterGetInputTensor: CTFLiteInterpreterGetInputTensor
    let interpreterGetOutputTensor: CTFLiteInterpreterGetOutputTensor
    let tensorType: CTFLiteTensorType
    let tensorNumDims: CTFLiteTensorNumDims
    let tensorDim: CTFLiteTensorDim
    let tensorByteSize: CTFLiteTensorByteSize
    let tensorQuantizationParams: CTFLiteTensorQuantizationParams
    let tensorCopyFromBuffer: CTFLiteTensorCopyFromBuffer
    let tensorCopyToBuffer: CTFLiteTensorCopyToBuffer

    public init(path: String) throws(TFLiteLibraryError) {
        guard let handle = dlopen(path, RTLD_NOW | RTLD_LOCAL) else {
            let reason = dlerror().map { String(cString: $0) } ?? "unknown error"
            throw TFLiteLibraryError(path: path, problem: "cannot be loaded (\(reason))")
        }
        func bind<T>(_ name: String, _: T.Type) throws(TFLiteLibraryError) -> T {
            guard let symbol = dlsym(handle, name) else {
                dlclose(handle)
                throw TFLiteLibraryError(path: path, problem: "has no \(name), so it is not TensorFlow Lite's C library")
            }
            return unsafeBitCast(symbol, to: T.self)
        }
        version = try bind("TfLiteVersion", CTFLiteVersion.self)
        modelCreateFromFile = try bind("TfLiteModelCreateFromFile", CTFLiteModelCreateFromFile.self)
        modelDelete = try bind("TfLiteModelDelete", CTFLiteModelDelete.self)
        interpreterCreate = try bind("TfLiteInterpreterCreate", CTFLiteInterpreterCreate.self)
        interpreterDelete = try bind("TfLiteInterpreterDelete", CTFLiteInterpreterDelete.self)
        interpreterAllocateTensors = try bind("TfLiteInterpreterAllocateTensors", CTFLiteInterpreterAllocateTensors.self)
        interpreterInvoke = try bind("TfLiteInterpreterInvoke", CTFLiteInterpreterInvoke.self)
        interpreterGetInputTensorCount = try bind("TfLiteInterpreterGetInputTensorCount", CTFLiteInterpreterGetInputTensorCount.self)
        interpreterGetOutputTensorCount = try bind("TfLiteInterpreterGetOutputTensorCount", CTFLiteInterpreterGetOutputTensorCount.self)
        interpreterGetInputTensor = try bind("TfLiteInterpreterGetInputTensor", CTFLiteInterpreterGetInputTensor.self)
        interpreterGetOutputTensor = try bind("TfLiteInterpreterGetOutputTensor", CTFLiteInterpreterGetOutputTensor.self)
        tensorType = try bind("TfLiteTensorType", CTFLiteTensorType.self)
        tensorNumDims = try bind("TfLiteTensorNumDims", CTFLiteTensorNumDims.self)
        tensorDim = try bind("TfLiteTensorDim", CTFLiteTensorDim.self)
        tensorByteSize = try bind("TfLiteTensorByteSize", CTFLiteTensorByteSize.self)
        tensorQuantizationParams = try bind("TfLiteTensorQuantizationParams", CTFLiteTensorQuantizationParams.self)
        tensorCopyFromBuffer = try bind("TfLiteTensorCopyFromBuffer", CTFLiteTensorCopyFromBuffer.self)
        tensorCopyToBuffer = try bind("TfLiteTensorCopyToBuffer", CTFLiteTensorCopyToBuffer.self)
        self.path = path
        self.handle = handle
    }

    /// The library's own version ("2.x.y").
    public var versionText: String { version().map { String(cString: $0) } ?? "unknown" }

    deinit { dlclose(handle) }
}

/// A TensorFlow Lite library that could not be opened or is not one.
public struct TFLiteLibraryError: Error, Equatable, CustomStringConvertible {
    public let path: String
    public let problem: String

    public init(path: String, problem: String) {
        self.path = path
        self.problem = problem
    }

    public var description: String {
        "TensorFlow Lite's C library \(path) \(problem); reinstall parlour-satellite, or in a source tree run scripts/deps, "
            + "which puts it in .build/wakeword/lib"
    }
}
