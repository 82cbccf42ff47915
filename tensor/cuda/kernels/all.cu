// all.cu: the one translation unit of pipecast's CUDA kernels. nvcc
// compiles it into kernels.fatbin (scripts/cuda-kernels.sh build), and the
// CPU emulator (tensor/cuda/emu) compiles it with g++ after its prelude;
// so the files below share one namespace, and each name in them is unique.
#include <float.h>
#include <math.h>

#include "kernels.h"

#include "common.cu"

#include "elementwise.cu"
#include "gemm.cu"
#include "conv.cu"
#include "conv_filter.cu"
#include "batchnorm.cu"
#include "pool.cu"
#include "channels.cu"
#include "dropout.cu"
#include "loss.cu"
#include "sgd.cu"
#include "adamw.cu"
#include "embedding.cu"
#include "norm.cu"
#include "activation.cu"
#include "rope.cu"
#include "attention.cu"
