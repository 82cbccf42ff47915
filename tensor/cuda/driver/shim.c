//go:build cuda

// shim.c: cuBLAS and cuDNN through dlopen (see shim.h). The function
// pointers are process-wide and written once, by pc_*_bind, under the Go
// side's sync.Once, before any wrapper is called.

#include <dlfcn.h>
#include <stddef.h>
#include "shim.h"

void *pc_dlopen(const char *name, const char **err) {
	void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
	*err = lib ? NULL : dlerror();
	return lib;
}

void pc_dlclose(void *lib) { dlclose(lib); }

// A symbol to resolve: its name and where its address goes.
typedef struct {
	const char *name;
	void **fn;
} pc_symbol;

// bind resolves every symbol of syms or none: on the first missing one it
// returns its name and leaves the pointers as they were (all NULL).
static const char *bind(void *lib, const pc_symbol *syms, int n) {
	void *found[64];
	if (n > 64) {
		return "(too many symbols)";
	}
	for (int i = 0; i < n; i++) {
		found[i] = dlsym(lib, syms[i].name);
		if (found[i] == NULL) {
			return syms[i].name;
		}
	}
	for (int i = 0; i < n; i++) {
		*syms[i].fn = found[i];
	}
	return NULL;
}

#define SYM(table, f) {#f, (void **)&table.f}

// ---- cuBLAS ----

static struct {
	int (*cublasCreate_v2)(void **);
	int (*cublasDestroy_v2)(void *);
	int (*cublasSetStream_v2)(void *, void *);
	int (*cublasGetVersion_v2)(void *, int *);
	int (*cublasSgemm_v2)(void *, int, int, int, int, int, const float *, const float *, int,
	                      const float *, int, const float *, float *, int);
	int (*cublasSgemmStridedBatched)(void *, int, int, int, int, int, const float *, const float *, int,
	                                 long long, const float *, int, long long, const float *, float *, int,
	                                 long long, int);
	const char *(*cublasGetStatusString)(int); // optional
} blas;

const char *pc_cublas_bind(void *lib) {
	const pc_symbol syms[] = {
		SYM(blas, cublasCreate_v2),
		SYM(blas, cublasDestroy_v2),
		SYM(blas, cublasSetStream_v2),
		SYM(blas, cublasGetVersion_v2),
		SYM(blas, cublasSgemm_v2),
		SYM(blas, cublasSgemmStridedBatched),
	};
	const char *missing = bind(lib, syms, (int)(sizeof syms / sizeof syms[0]));
	if (missing == NULL) {
		// The form POSIX gives for storing dlsym's result in a function
		// pointer.
		*(void **)&blas.cublasGetStatusString = dlsym(lib, "cublasGetStatusString");
	}
	return missing;
}

int pc_cublasCreate_v2(void **handle) { return blas.cublasCreate_v2(handle); }
int pc_cublasDestroy_v2(void *handle) { return blas.cublasDestroy_v2(handle); }
int pc_cublasSetStream_v2(void *handle, void *stream) { return blas.cublasSetStream_v2(handle, stream); }
int pc_cublasGetVersion_v2(void *handle, int *version) { return blas.cublasGetVersion_v2(handle, version); }

int pc_cublasSgemm_v2(void *handle, int transa, int transb, int m, int n, int k,
                      float alpha, uint64_t a, int lda, uint64_t b, int ldb,
                      float beta, uint64_t c, int ldc) {
	return blas.cublasSgemm_v2(handle, transa, transb, m, n, k, &alpha,
	                           (const float *)(uintptr_t)a, lda, (const float *)(uintptr_t)b, ldb,
	                           &beta, (float *)(uintptr_t)c, ldc);
}

int pc_cublasSgemmStridedBatched(void *handle, int transa, int transb, int m, int n, int k,
                                 float alpha, uint64_t a, int lda, long long strideA, uint64_t b, int ldb,
                                 long long strideB, float beta, uint64_t c, int ldc, long long strideC,
                                 int batch) {
	return blas.cublasSgemmStridedBatched(handle, transa, transb, m, n, k, &alpha,
	                                      (const float *)(uintptr_t)a, lda, strideA,
	                                      (const float *)(uintptr_t)b, ldb, strideB,
	                                      &beta, (float *)(uintptr_t)c, ldc, strideC, batch);
}

const char *pc_cublasGetStatusString(int status) {
	return blas.cublasGetStatusString ? blas.cublasGetStatusString(status) : NULL;
}

// ---- cuDNN ----

static struct {
	int (*cudnnCreate)(void **);
	int (*cudnnDestroy)(void *);
	int (*cudnnSetStream)(void *, void *);
	size_t (*cudnnGetVersion)(void);
	const char *(*cudnnGetErrorString)(int);
	int (*cudnnCreateTensorDescriptor)(void **);
	int (*cudnnSetTensor4dDescriptor)(void *, int, int, int, int, int, int);
	int (*cudnnDestroyTensorDescriptor)(void *);
	int (*cudnnCreateFilterDescriptor)(void **);
	int (*cudnnSetFilter4dDescriptor)(void *, int, int, int, int, int, int);
	int (*cudnnDestroyFilterDescriptor)(void *);
	int (*cudnnCreateConvolutionDescriptor)(void **);
	int (*cudnnSetConvolution2dDescriptor)(void *, int, int, int, int, int, int, int, int);
	int (*cudnnSetConvolutionMathType)(void *, int);
	int (*cudnnDestroyConvolutionDescriptor)(void *);
	int (*cudnnGetConvolution2dForwardOutputDim)(void *, void *, void *, int *, int *, int *, int *);
	int (*cudnnGetConvolutionForwardAlgorithm_v7)(void *, void *, void *, void *, void *, int, int *, pc_cudnnAlgoPerf *);
	int (*cudnnGetConvolutionBackwardDataAlgorithm_v7)(void *, void *, void *, void *, void *, int, int *, pc_cudnnAlgoPerf *);
	int (*cudnnGetConvolutionBackwardFilterAlgorithm_v7)(void *, void *, void *, void *, void *, int, int *, pc_cudnnAlgoPerf *);
	int (*cudnnGetConvolutionForwardWorkspaceSize)(void *, void *, void *, void *, void *, int, size_t *);
	int (*cudnnGetConvolutionBackwardDataWorkspaceSize)(void *, void *, void *, void *, void *, int, size_t *);
	int (*cudnnGetConvolutionBackwardFilterWorkspaceSize)(void *, void *, void *, void *, void *, int, size_t *);
	int (*cudnnConvolutionForward)(void *, const void *, void *, const void *, void *, const void *, void *, int,
	                               void *, size_t, const void *, void *, void *);
	int (*cudnnConvolutionBackwardData)(void *, const void *, void *, const void *, void *, const void *, void *, int,
	                                    void *, size_t, const void *, void *, void *);
	int (*cudnnConvolutionBackwardFilter)(void *, const void *, void *, const void *, void *, const void *, void *, int,
	                                      void *, size_t, const void *, void *, void *);
} dnn;

const char *pc_cudnn_bind(void *lib) {
	const pc_symbol syms[] = {
		SYM(dnn, cudnnCreate),
		SYM(dnn, cudnnDestroy),
		SYM(dnn, cudnnSetStream),
		SYM(dnn, cudnnGetVersion),
		SYM(dnn, cudnnGetErrorString),
		SYM(dnn, cudnnCreateTensorDescriptor),
		SYM(dnn, cudnnSetTensor4dDescriptor),
		SYM(dnn, cudnnDestroyTensorDescriptor),
		SYM(dnn, cudnnCreateFilterDescriptor),
		SYM(dnn, cudnnSetFilter4dDescriptor),
		SYM(dnn, cudnnDestroyFilterDescriptor),
		SYM(dnn, cudnnCreateConvolutionDescriptor),
		SYM(dnn, cudnnSetConvolution2dDescriptor),
		SYM(dnn, cudnnSetConvolutionMathType),
		SYM(dnn, cudnnDestroyConvolutionDescriptor),
		SYM(dnn, cudnnGetConvolution2dForwardOutputDim),
		SYM(dnn, cudnnGetConvolutionForwardAlgorithm_v7),
		SYM(dnn, cudnnGetConvolutionBackwardDataAlgorithm_v7),
		SYM(dnn, cudnnGetConvolutionBackwardFilterAlgorithm_v7),
		SYM(dnn, cudnnGetConvolutionForwardWorkspaceSize),
		SYM(dnn, cudnnGetConvolutionBackwardDataWorkspaceSize),
		SYM(dnn, cudnnGetConvolutionBackwardFilterWorkspaceSize),
		SYM(dnn, cudnnConvolutionForward),
		SYM(dnn, cudnnConvolutionBackwardData),
		SYM(dnn, cudnnConvolutionBackwardFilter),
	};
	return bind(lib, syms, (int)(sizeof syms / sizeof syms[0]));
}

int pc_cudnnCreate(void **handle) { return dnn.cudnnCreate(handle); }
int pc_cudnnDestroy(void *handle) { return dnn.cudnnDestroy(handle); }
int pc_cudnnSetStream(void *handle, void *stream) { return dnn.cudnnSetStream(handle, stream); }
size_t pc_cudnnGetVersion(void) { return dnn.cudnnGetVersion(); }
const char *pc_cudnnGetErrorString(int status) { return dnn.cudnnGetErrorString(status); }

int pc_cudnnCreateTensorDescriptor(void **desc) { return dnn.cudnnCreateTensorDescriptor(desc); }
int pc_cudnnSetTensor4dDescriptor(void *desc, int format, int dataType, int n, int c, int h, int w) {
	return dnn.cudnnSetTensor4dDescriptor(desc, format, dataType, n, c, h, w);
}
int pc_cudnnDestroyTensorDescriptor(void *desc) { return dnn.cudnnDestroyTensorDescriptor(desc); }
int pc_cudnnCreateFilterDescriptor(void **desc) { return dnn.cudnnCreateFilterDescriptor(desc); }
int pc_cudnnSetFilter4dDescriptor(void *desc, int dataType, int format, int k, int c, int h, int w) {
	return dnn.cudnnSetFilter4dDescriptor(desc, dataType, format, k, c, h, w);
}
int pc_cudnnDestroyFilterDescriptor(void *desc) { return dnn.cudnnDestroyFilterDescriptor(desc); }
int pc_cudnnCreateConvolutionDescriptor(void **desc) { return dnn.cudnnCreateConvolutionDescriptor(desc); }
int pc_cudnnSetConvolution2dDescriptor(void *desc, int padH, int padW, int strideH, int strideW,
                                       int dilationH, int dilationW, int mode, int computeType) {
	return dnn.cudnnSetConvolution2dDescriptor(desc, padH, padW, strideH, strideW, dilationH, dilationW, mode,
	                                           computeType);
}
int pc_cudnnSetConvolutionMathType(void *desc, int mathType) { return dnn.cudnnSetConvolutionMathType(desc, mathType); }
int pc_cudnnDestroyConvolutionDescriptor(void *desc) { return dnn.cudnnDestroyConvolutionDescriptor(desc); }
int pc_cudnnGetConvolution2dForwardOutputDim(void *conv, void *x, void *w, int *n, int *c, int *h, int *wd) {
	return dnn.cudnnGetConvolution2dForwardOutputDim(conv, x, w, n, c, h, wd);
}

int pc_cudnnGetConvolutionForwardAlgorithm_v7(void *handle, void *x, void *w, void *conv, void *y,
                                              int requested, int *returned, pc_cudnnAlgoPerf *perf) {
	return dnn.cudnnGetConvolutionForwardAlgorithm_v7(handle, x, w, conv, y, requested, returned, perf);
}
int pc_cudnnGetConvolutionBackwardDataAlgorithm_v7(void *handle, void *w, void *dy, void *conv, void *dx,
                                                   int requested, int *returned, pc_cudnnAlgoPerf *perf) {
	return dnn.cudnnGetConvolutionBackwardDataAlgorithm_v7(handle, w, dy, conv, dx, requested, returned, perf);
}
int pc_cudnnGetConvolutionBackwardFilterAlgorithm_v7(void *handle, void *x, void *dy, void *conv, void *dw,
                                                     int requested, int *returned, pc_cudnnAlgoPerf *perf) {
	return dnn.cudnnGetConvolutionBackwardFilterAlgorithm_v7(handle, x, dy, conv, dw, requested, returned, perf);
}
int pc_cudnnGetConvolutionForwardWorkspaceSize(void *handle, void *x, void *w, void *conv, void *y,
                                               int algo, size_t *size) {
	return dnn.cudnnGetConvolutionForwardWorkspaceSize(handle, x, w, conv, y, algo, size);
}
int pc_cudnnGetConvolutionBackwardDataWorkspaceSize(void *handle, void *w, void *dy, void *conv, void *dx,
                                                    int algo, size_t *size) {
	return dnn.cudnnGetConvolutionBackwardDataWorkspaceSize(handle, w, dy, conv, dx, algo, size);
}
int pc_cudnnGetConvolutionBackwardFilterWorkspaceSize(void *handle, void *x, void *dy, void *conv, void *dw,
                                                      int algo, size_t *size) {
	return dnn.cudnnGetConvolutionBackwardFilterWorkspaceSize(handle, x, dy, conv, dw, algo, size);
}

int pc_cudnnConvolutionForward(void *handle, float alpha, void *xDesc, uint64_t x, void *wDesc, uint64_t w,
                               void *conv, int algo, uint64_t ws, size_t wsSize,
                               float beta, void *yDesc, uint64_t y) {
	return dnn.cudnnConvolutionForward(handle, &alpha, xDesc, (const void *)(uintptr_t)x, wDesc,
	                                   (const void *)(uintptr_t)w, conv, algo, (void *)(uintptr_t)ws, wsSize,
	                                   &beta, yDesc, (void *)(uintptr_t)y);
}
int pc_cudnnConvolutionBackwardData(void *handle, float alpha, void *wDesc, uint64_t w, void *dyDesc, uint64_t dy,
                                    void *conv, int algo, uint64_t ws, size_t wsSize,
                                    float beta, void *dxDesc, uint64_t dx) {
	return dnn.cudnnConvolutionBackwardData(handle, &alpha, wDesc, (const void *)(uintptr_t)w, dyDesc,
	                                        (const void *)(uintptr_t)dy, conv, algo, (void *)(uintptr_t)ws, wsSize,
	                                        &beta, dxDesc, (void *)(uintptr_t)dx);
}
int pc_cudnnConvolutionBackwardFilter(void *handle, float alpha, void *xDesc, uint64_t x, void *dyDesc, uint64_t dy,
                                      void *conv, int algo, uint64_t ws, size_t wsSize,
                                      float beta, void *dwDesc, uint64_t dw) {
	return dnn.cudnnConvolutionBackwardFilter(handle, &alpha, xDesc, (const void *)(uintptr_t)x, dyDesc,
	                                          (const void *)(uintptr_t)dy, conv, algo, (void *)(uintptr_t)ws, wsSize,
	                                          &beta, dwDesc, (void *)(uintptr_t)dw);
}
