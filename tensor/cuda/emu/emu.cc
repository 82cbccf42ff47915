//go:build cudaemu

// emu.cc compiles the CUDA C of ../kernels as C++ (prelude.h) together
// with the dispatch generated from kernels.h, and launches its kernels on
// the scheduler of sched.cc.
#include "prelude.h"

#include "sched.h"

#include "../kernels/all.cu"

#include "dispatch_gen.h"

#include <stdio.h>

namespace {

struct KernelCall {
	int k;
	void** args;
};

void callKernel(void* p) {
	KernelCall* c = static_cast<KernelCall*>(p);
	pc_emu_dispatch(c->k, c->args);
}

}  // namespace

extern "C" int pc_emu_launch(int k, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                             unsigned bz, void** args, char* err, int errlen) {
	if (k < 0 || k >= PC_EMU_NUM_KERNELS) {
		snprintf(err, errlen, "no kernel %d: kernels.h declares %d", k, PC_EMU_NUM_KERNELS);
		return -1;
	}
	KernelCall c{k, args};
	return pc_emu_run(callKernel, &c, gx, gy, gz, bx, by, bz, err, errlen);
}
