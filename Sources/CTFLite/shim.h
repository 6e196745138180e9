// The part of TensorFlow Lite's C API (tensorflow/lite/core/c/c_api.h) the local
// wake word uses, declared here rather than taken from TensorFlow: the library
// comes as a bare .so in PyPI's pymicro-wakeword, without headers, and Debian has
// neither. Only types and function-pointer types: the daemon dlopens the library
// when `wake` is `local` and looks each function up by name, so nothing links
// against it and a satellite that never listens locally never loads it.
#include <stddef.h>
#include <stdint.h>

typedef struct TfLiteModel TfLiteModel;
typedef struct TfLiteInterpreterOptions TfLiteInterpreterOptions;
typedef struct TfLiteInterpreter TfLiteInterpreter;
typedef struct TfLiteTensor TfLiteTensor;

// TfLiteStatus: kTfLiteOk is 0.
typedef int TfLiteStatus;

// TfLiteType's values for the quantised tensors a microWakeWord model has.
enum {
    CTFLiteTypeUInt8 = 3,
    CTFLiteTypeInt8 = 9,
};

typedef struct TfLiteQuantizationParams {
    float scale;
    int32_t zero_point;
} TfLiteQuantizationParams;

typedef const char *(*CTFLiteVersion)(void);
typedef TfLiteModel *(*CTFLiteModelCreateFromFile)(const char *model_path);
typedef void (*CTFLiteModelDelete)(TfLiteModel *model);
typedef TfLiteInterpreter *(*CTFLiteInterpreterCreate)(const TfLiteModel *model,
                                                        const TfLiteInterpreterOptions *optional_options);
typedef void (*CTFLiteInterpreterDelete)(TfLiteInterpreter *interpreter);
typedef TfLiteStatus (*CTFLiteInterpreterAllocateTensors)(TfLiteInterpreter *interpreter);
typedef TfLiteStatus (*CTFLiteInterpreterInvoke)(TfLiteInterpreter *interpreter);
typedef int32_t (*CTFLiteInterpreterGetInputTensorCount)(const TfLiteInterpreter *interpreter);
typedef int32_t (*CTFLiteInterpreterGetOutputTensorCount)(const TfLiteInterpreter *interpreter);
typedef TfLiteTensor *(*CTFLiteInterpreterGetInputTensor)(const TfLiteInterpreter *interpreter, int32_t input_index);
typedef const TfLiteTensor *(*CTFLiteInterpreterGetOutputTensor)(const TfLiteInterpreter *interpreter,
                                                                  int32_t output_index);
typedef int (*CTFLiteTensorType)(const TfLiteTensor *tensor);
typedef int32_t (*CTFLiteTensorNumDims)(const TfLiteTensor *tensor);
typedef int32_t (*CTFLiteTensorDim)(const TfLiteTensor *tensor, int32_t dim_index);
typedef size_t (*CTFLiteTensorByteSize)(const TfLiteTensor *tensor);
typedef TfLiteQuantizationParams (*CTFLiteTensorQuantizationParams)(const TfLiteTensor *tensor);
typedef TfLiteStatus (*CTFLiteTensorCopyFromBuffer)(TfLiteTensor *tensor, const void *input_data, size_t input_data_size);
typedef TfLiteStatus (*CTFLiteTensorCopyToBuffer)(const TfLiteTensor *output_tensor, void *output_data,
                                                  size_t output_data_size);
