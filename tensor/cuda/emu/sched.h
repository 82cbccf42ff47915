// sched.h is the C interface of the emulator: the launch of a kernel of
// kernels.h (emu.cc), the scheduler that runs a grid's threads (sched.cc)
// and the scheduler's self-test kernels (selftest.cc). It is C, for cgo.
#ifndef PIPECAST_EMU_SCHED_H
#define PIPECAST_EMU_SCHED_H

#ifdef __cplusplus
extern "C" {
#endif

// pc_emu_launch runs kernel k (its index in kernels.h) on a grid of
// gx×gy×gz blocks of bx×by×bz threads, with args as cuLaunchKernel takes
// kernelParams, and returns when it has completed: 0, or -1 with a
// message in err (errlen bytes, NUL-terminated).
int pc_emu_launch(int k, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                  unsigned bz, void** args, char* err, int errlen);

// pc_emu_selftest runs self-test kernel which (selftest.cc) with out
// (n floats) as its argument, as pc_emu_launch does.
int pc_emu_selftest(int which, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                    unsigned bz, float* out, long long n, char* err, int errlen);

// pc_emu_run runs body(arg) as every thread of the grid: the blocks one
// after another (x fastest, then y, then z), the threads of a block as
// coroutines on the calling OS thread. It returns 0, or -1 with a message
// in err for a geometry CUDA rejects or a thread that returned while
// others of its block waited at __syncthreads().
int pc_emu_run(void (*body)(void*), void* arg, unsigned gx, unsigned gy, unsigned gz,
               unsigned bx, unsigned by, unsigned bz, char* err, int errlen);

// pc_emu_set_reversed makes the launches that start after it run the
// blocks of a grid and the threads of each block last first (on != 0),
// or first first (0, the default).
void pc_emu_set_reversed(int on);

#ifdef __cplusplus
}
#endif

#endif
