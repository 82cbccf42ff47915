//go:build cuda

// shim.h: the C side of the cgo boundary to cuBLAS and cuDNN (libs.go,
// cublas.go and cudnn.go include it; shim.c implements it).
//
// Neither library is linked: shim.c opens them with dlopen at run time and
// resolves each function below with dlsym, so that whichever major version
// a machine has (cuBLAS 11–13, cuDNN 8–9) serves, and a machine without
// them still runs pipecast's own kernels. Hence no cublas_v2.h or cudnn.h
// either: the few types, enumerators and prototypes used are declared
// here, with the libraries' documented values. Every pc_X wrapper calls X
// through its resolved pointer with X's arguments; handles and
// descriptors are opaque pointers, device addresses unsigned 64-bit
// integers (CUdeviceptr), statuses ints.
#ifndef PIPECAST_CUDA_DRIVER_SHIM_H
#define PIPECAST_CUDA_DRIVER_SHIM_H

#include <stddef.h>
#include <stdint.h>

// ---- loading ----

// pc_dlopen opens a shared library (RTLD_NOW | RTLD_LOCAL). On failure it
// returns NULL and sets *err to dlerror's text (static: copy it at once).
void *pc_dlopen(const char *name, const char **err);
// pc_dlclose closes a library that a bind left unused.
void pc_dlclose(void *lib);
// pc_cublas_bind and pc_cudnn_bind resolve every function of the library
// in lib, returning NULL, or the name of the first missing symbol (and
// then leave the library unused).
const char *pc_cublas_bind(void *lib);
const char *pc_cudnn_bind(void *lib);

// ---- cuBLAS (cublas_api.h of cuBLAS 11–13) ----

// cublasStatus_t: CUBLAS_STATUS_SUCCESS = 0.
// cublasOperation_t: CUBLAS_OP_N = 0, CUBLAS_OP_T = 1.
enum { PC_CUBLAS_OP_N = 0, PC_CUBLAS_OP_T = 1 };

int pc_cublasCreate_v2(void **handle);
int pc_cublasDestroy_v2(void *handle);
int pc_cublasSetStream_v2(void *handle, void *stream);
int pc_cublasGetVersion_v2(void *handle, int *version);
int pc_cublasSgemm_v2(void *handle, int transa, int transb, int m, int n, int k,
                      float alpha, uint64_t a, int lda, uint64_t b, int ldb,
                      float beta, uint64_t c, int ldc);
// pc_cublasSgemmStridedBatched is cublasSgemmStridedBatched (cuBLAS 8 and
// later): strides in elements, as long long.
int pc_cublasSgemmStridedBatched(void *handle, int transa, int transb, int m, int n, int k,
                                 float alpha, uint64_t a, int lda, long long strideA, uint64_t b, int ldb,
                                 long long strideB, float beta, uint64_t c, int ldc, long long strideC,
                                 int batch);
// pc_cublasGetStatusString returns cublasGetStatusString's text, or NULL
// where the library predates it (cuBLAS before 11.4.2): that symbol is
// optional.
const char *pc_cublasGetStatusString(int status);

// ---- cuDNN (cudnn_ops.h and cudnn_cnn.h of cuDNN 9; cudnn_ops_infer.h
// and cudnn_cnn_infer.h of cuDNN 8: the same values) ----

// cudnnStatus_t: CUDNN_STATUS_SUCCESS = 0 (the other codes differ between
// 8 and 9: cudnnGetErrorString names them).
// cudnnTensorFormat_t: CUDNN_TENSOR_NCHW = 0.
// cudnnDataType_t: CUDNN_DATA_FLOAT = 0.
// cudnnConvolutionMode_t: CUDNN_CONVOLUTION = 0, CUDNN_CROSS_CORRELATION = 1.
// cudnnMathType_t: CUDNN_DEFAULT_MATH = 0, CUDNN_TENSOR_OP_MATH = 1,
// CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION = 2, CUDNN_FMA_MATH = 3.
enum {
	PC_CUDNN_TENSOR_NCHW = 0,
	PC_CUDNN_DATA_FLOAT = 0,
	PC_CUDNN_CROSS_CORRELATION = 1,
	PC_CUDNN_FMA_MATH = 3,
};

// pc_cudnnAlgoPerf has the layout of cudnnConvolutionFwdAlgoPerf_t,
// cudnnConvolutionBwdDataAlgoPerf_t and cudnnConvolutionBwdFilterAlgoPerf_t,
// which are alike member for member (enums are ints).
typedef struct {
	int algo;        // cudnnConvolution{Fwd,BwdData,BwdFilter}Algo_t
	int status;      // cudnnStatus_t
	float time;      // milliseconds; -1 from the heuristics
	size_t memory;   // workspace bytes
	int determinism; // cudnnDeterminism_t
	int mathType;    // cudnnMathType_t
	int reserved[3];
} pc_cudnnAlgoPerf;

int pc_cudnnCreate(void **handle);
int pc_cudnnDestroy(void *handle);
int pc_cudnnSetStream(void *handle, void *stream);
size_t pc_cudnnGetVersion(void);
const char *pc_cudnnGetErrorString(int status);

int pc_cudnnCreateTensorDescriptor(void **desc);
int pc_cudnnSetTensor4dDescriptor(void *desc, int format, int dataType, int n, int c, int h, int w);
int pc_cudnnDestroyTensorDescriptor(void *desc);
int pc_cudnnCreateFilterDescriptor(void **desc);
int pc_cudnnSetFilter4dDescriptor(void *desc, int dataType, int format, int k, int c, int h, int w);
int pc_cudnnDestroyFilterDescriptor(void *desc);
int pc_cudnnCreateConvolutionDescriptor(void **desc);
int pc_cudnnSetConvolution2dDescriptor(void *desc, int padH, int padW, int strideH, int strideW,
                                       int dilationH, int dilationW, int mode, int computeType);
int pc_cudnnSetConvolutionMathType(void *desc, int mathType);
int pc_cudnnDestroyConvolutionDescriptor(void *desc);
int pc_cudnnGetConvolution2dForwardOutputDim(void *conv, void *x, void *w, int *n, int *c, int *h, int *wd);

int pc_cudnnGetConvolutionForwardAlgorithm_v7(void *handle, void *x, void *w, void *conv, void *y,
                                              int requested, int *returned, pc_cudnnAlgoPerf *perf);
int pc_cudnnGetConvolutionBackwardDataAlgorithm_v7(void *handle, void *w, void *dy, void *conv, void *dx,
                                                   int requested, int *returned, pc_cudnnAlgoPerf *perf);
int pc_cudnnGetConvolutionBackwardFilterAlgorithm_v7(void *handle, void *x, void *dy, void *conv, void *dw,
                                                     int requested, int *returned, pc_cudnnAlgoPerf *perf);
int pc_cudnnGetConvolutionForwardWorkspaceSize(void *handle, void *x, void *w, void *conv, void *y,
                                               int algo, size_t *size);
int pc_cudnnGetConvolutionBackwardDataWorkspaceSize(void *handle, void *w, void *dy, void *conv, void *dx,
                                                    int algo, size_t *size);
int pc_cudnnGetConvolutionBackwardFilterWorkspaceSize(void *handle, void *x, void *dy, void *conv, void *dw,
                                                      int algo, size_t *size);

// The convolutions take alpha and beta by value here (host floats).
int pc_cudnnConvolutionForward(void *handle, float alpha, void *xDesc, uint64_t x, void *wDesc, uint64_t w,
                               void *conv, int algo, uint64_t ws, size_t wsSize,
                               float beta, void *yDesc, uint64_t y);
int pc_cudnnConvolutionBackwardData(void *handle, float alpha, void *wDesc, uint64_t w, void *dyDesc, uint64_t dy,
                                    void *conv, int algo, uint64_t ws, size_t wsSize,
                                    float beta, void *dxDesc, uint64_t dx);
int pc_cudnnConvolutionBackwardFilter(void *handle, float alpha, void *xDesc, uint64_t x, void *dyDesc, uint64_t dy,
                                      void *conv, int algo, uint64_t ws, size_t wsSize,
                                      float beta, void *dwDesc, uint64_t dw);

#endif
