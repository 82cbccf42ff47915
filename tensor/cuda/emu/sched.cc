//go:build cudaemu

// The emulator's scheduler: it runs a grid's threads on the calling OS
// thread, block after block, and the threads of a block as coroutines.
//
// A thread runs until it returns or reaches __syncthreads(); the
// scheduler starts the block's threads in order, and once every thread
// that has not returned waits at the barrier, it resumes them in order,
// round after round. A thread that returned while others wait at a
// barrier is a kernel bug (the GPU's behaviour is undefined, often a
// hang): the launch fails with an error naming it.
//
// The GPU promises no order among blocks, nor among threads between
// barriers: pc_emu_set_reversed runs both in the reverse order, so that
// the tests catch kernels whose result depends on it (a missing barrier
// before a read shows in one order, before a write in the other).
//
// A thread that returns hands its stack straight to the next unstarted
// thread of the block, without a switch, so a kernel without barriers
// runs its threads one after another on one coroutine at the cost of a
// call each; only threads suspended at a barrier hold a stack of their
// own. The stacks (one per thread of a block at most, kStackBytes each
// with a guard page below) are kept per OS thread and reused by every
// later launch on it; a coroutine never moves to another OS thread, which
// keeps its thread-local variables (the built-in indices, __shared__
// arrays) its own.
#include "prelude.h"
#include "sched.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <vector>

#if !defined(__x86_64__) || defined(PC_EMU_UCONTEXT)
#include <ucontext.h>
#endif

thread_local pc_emu_geometry pc_emu_geom;
thread_local uint3 pc_emu_thread_idx;

namespace {

// kStackBytes is each coroutine's stack: the kernels keep 4×4
// accumulators and a few locals, far below it; the pages are touched only
// as used.
constexpr size_t kStackBytes = 256 << 10;
// CUDA's limits on a launch (compute capability 3.0 and later).
constexpr unsigned kMaxBlockThreads = 1024, kMaxBlockZ = 64, kMaxGridX = 0x7fffffffu,
                   kMaxGridYZ = 65535;

[[noreturn]] void trampoline();

// reversed makes launches run their blocks, and the threads of each
// block, in the reverse order (pc_emu_set_reversed).
std::atomic<bool> reversed{false};

// Context is a suspended coroutine; switchTo saves the running one in
// from and resumes to.
#if defined(__x86_64__) && !defined(PC_EMU_UCONTEXT)
// On x86-64, a switch saves the callee-saved registers and the floating-
// point control words (the System V ABI's preserved state) on the
// stack, and swaps stack pointers: no system call, unlike swapcontext,
// which saves the signal mask too (the suite takes about three times as
// long on it; CGO_CXXFLAGS=-DPC_EMU_UCONTEXT selects it here too).
extern "C" void pc_emu_swap(void** save, void* to);
asm(R"(
	.text
	.p2align 4
	.globl pc_emu_swap
	.hidden pc_emu_swap
	.type pc_emu_swap, @function
pc_emu_swap:
	pushq %rbp
	pushq %rbx
	pushq %r12
	pushq %r13
	pushq %r14
	pushq %r15
	subq $8, %rsp
	stmxcsr (%rsp)
	fnstcw 4(%rsp)
	movq %rsp, (%rdi)
	movq %rsi, %rsp
	ldmxcsr (%rsp)
	fldcw 4(%rsp)
	addq $8, %rsp
	popq %r15
	popq %r14
	popq %r13
	popq %r12
	popq %rbx
	popq %rbp
	ret
	.size pc_emu_swap, .-pc_emu_swap
)");

struct Context {
	void* sp;
};

// initContext makes c start trampoline on the stack [base, base+size):
// the frame pc_emu_swap pops (control words, six registers, the return
// address), above it a null return address for trampoline, which never
// returns, so that trampoline starts with the stack aligned as after a
// call.
void initContext(Context* c, char* base, size_t size) {
	void** sp = reinterpret_cast<void**>((reinterpret_cast<uintptr_t>(base + size)) & ~uintptr_t(15));
	*--sp = nullptr;
	*--sp = reinterpret_cast<void*>(&trampoline);
	for (int i = 0; i < 6; i++) {
		*--sp = nullptr;
	}
	--sp;
	unsigned mxcsr;
	unsigned short fcw;
	asm volatile("stmxcsr %0" : "=m"(mxcsr));
	asm volatile("fnstcw %0" : "=m"(fcw));
	memcpy(reinterpret_cast<char*>(sp), &mxcsr, 4);
	memcpy(reinterpret_cast<char*>(sp) + 4, &fcw, 2);
	c->sp = sp;
}

inline void switchTo(Context* from, Context* to) { pc_emu_swap(&from->sp, to->sp); }
#else
// Elsewhere, the portable ucontext switch.

struct Context {
	ucontext_t uc;
};

void initContext(Context* c, char* base, size_t size) {
	getcontext(&c->uc);
	c->uc.uc_stack.ss_sp = base;
	c->uc.uc_stack.ss_size = size;
	c->uc.uc_link = nullptr;
	makecontext(&c->uc, trampoline, 0);
}

inline void switchTo(Context* from, Context* to) { swapcontext(&from->uc, &to->uc); }
#endif

// Stack is a coroutine's stack and, while it is not running, its
// context: in trampoline between threads when idle, in
// pc_emu_syncthreads when its thread waits at a barrier.
struct Stack {
	char* mapping;
	size_t mappingBytes;
	Context ctx;
};

enum State { kUnstarted, kRunning, kWaiting, kResuming, kDone };

struct Thread {
	uint3 idx;
	State state;
	Stack* stack;
};

// Machine runs the launches of one OS thread.
struct Machine {
	Context sched;  // the scheduler, on the OS thread's own stack
	std::vector<Stack*> stacks, idle;
	std::vector<Thread> threads;  // the block's, in the order they run
	unsigned next = 0;            // the first unstarted thread
	unsigned done = 0, waiting = 0;
	Thread* cur = nullptr;
	Stack* starting = nullptr;  // the stack trampoline is resumed on
	Stack* released = nullptr;  // the stack a trampoline handed back
	void (*body)(void*) = nullptr;
	void* arg = nullptr;

	~Machine() {
		for (Stack* s : stacks) {
			munmap(s->mapping, s->mappingBytes);
			delete s;
		}
	}

	// takeStack returns an idle stack, mapping a new one when none is.
	Stack* takeStack() {
		if (!idle.empty()) {
			Stack* s = idle.back();
			idle.pop_back();
			return s;
		}
		size_t page = size_t(sysconf(_SC_PAGESIZE));
		size_t bytes = kStackBytes + page;
		void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
		if (p == MAP_FAILED) {
			return nullptr;
		}
		// The guard page turns an overflow into a fault rather than a
		// write into the neighbouring mapping.
		mprotect(p, page, PROT_NONE);
		Stack* s = new Stack{static_cast<char*>(p), bytes, {}};
		initContext(&s->ctx, s->mapping + page, kStackBytes);
		stacks.push_back(s);
		return s;
	}

	// reclaim takes back the stack a finished trampoline handed back.
	void reclaim() {
		if (released != nullptr) {
			idle.push_back(released);
			released = nullptr;
		}
	}

	// abandon resets the stacks of the threads left waiting by a failed
	// block; their frames hold nothing to release (CUDA C).
	void abandon() {
		for (Thread& t : threads) {
			if (t.stack != nullptr) {
				size_t page = size_t(sysconf(_SC_PAGESIZE));
				initContext(&t.stack->ctx, t.stack->mapping + page, kStackBytes);
				idle.push_back(t.stack);
				t.stack = nullptr;
			}
		}
	}

	bool runBlock(char* err, int errlen);
};

Machine& machine() {
	static thread_local Machine m;
	return m;
}

// trampoline runs unstarted threads of the block on the stack it was
// resumed on, one after another, until none is left, then hands the
// stack back and waits to be resumed for the next block.
void trampoline() {
	Machine* m = &machine();
	for (;;) {
		Stack* s = m->starting;
		while (m->next < m->threads.size()) {
			Thread* t = &m->threads[m->next++];
			t->state = kRunning;
			t->stack = s;
			m->cur = t;
			pc_emu_thread_idx = t->idx;
			m->body(m->arg);
			t->state = kDone;
			t->stack = nullptr;
			m->done++;
		}
		m->released = s;
		switchTo(&s->ctx, &m->sched);
	}
}

const char* describe(const uint3& v, char* buf, size_t n) {
	snprintf(buf, n, "(%u,%u,%u)", v.x, v.y, v.z);
	return buf;
}

// runBlock runs every thread of the block pc_emu_geom.index to its
// end, or fails it.
bool Machine::runBlock(char* err, int errlen) {
	next = done = waiting = 0;
	for (Thread& t : threads) {
		t.state = kUnstarted;
		t.stack = nullptr;
	}
	while (next < threads.size()) {
		starting = takeStack();
		if (starting == nullptr) {
			snprintf(err, errlen, "map a %zu-byte coroutine stack: %s", kStackBytes, strerror(errno));
			abandon();
			return false;
		}
		switchTo(&sched, &starting->ctx);
		reclaim();
	}
	while (waiting > 0) {
		if (done > 0) {
			const Thread* gone = nullptr;
			for (const Thread& t : threads) {
				if (t.state == kDone) {
					gone = &t;
					break;
				}
			}
			char a[40], b[40];
			snprintf(err, errlen, "thread %s of block %s returned while %u threads of the block wait at __syncthreads()",
			         describe(gone->idx, a, sizeof a), describe(pc_emu_geom.index, b, sizeof b), waiting);
			abandon();
			return false;
		}
		for (Thread& t : threads) {
			if (t.state == kWaiting) {
				t.state = kResuming;
			}
		}
		waiting = 0;
		for (Thread& t : threads) {
			if (t.state != kResuming) {
				continue;
			}
			t.state = kRunning;
			cur = &t;
			pc_emu_thread_idx = t.idx;
			switchTo(&sched, &t.stack->ctx);
			reclaim();
		}
	}
	return true;
}

}  // namespace

extern "C" void pc_emu_syncthreads(void) {
	Machine* m = &machine();
	Thread* t = m->cur;
	if (t == nullptr || t->state != kRunning) {
		fprintf(stderr, "pipecast emulator: __syncthreads() outside a kernel\n");
		abort();
	}
	t->state = kWaiting;
	m->waiting++;
	switchTo(&t->stack->ctx, &m->sched);
}

extern "C" void pc_emu_set_reversed(int on) { reversed.store(on != 0); }

extern "C" int pc_emu_run(void (*body)(void*), void* arg, unsigned gx, unsigned gy, unsigned gz,
                          unsigned bx, unsigned by, unsigned bz, char* err, int errlen) {
	unsigned long long threads = (unsigned long long)bx * by * bz;
	if (gx == 0 || gy == 0 || gz == 0 || gx > kMaxGridX || gy > kMaxGridYZ || gz > kMaxGridYZ) {
		snprintf(err, errlen, "invalid grid %u×%u×%u (CUDA takes 1 to 2^31−1 × 65535 × 65535 blocks)", gx, gy, gz);
		return -1;
	}
	if (bx == 0 || by == 0 || bz == 0 || bx > kMaxBlockThreads || by > kMaxBlockThreads || bz > kMaxBlockZ ||
	    threads > kMaxBlockThreads) {
		snprintf(err, errlen, "invalid block %u×%u×%u (CUDA takes at most 1024 threads, 1024×1024×64)", bx, by, bz);
		return -1;
	}
	Machine* m = &machine();
	m->body = body;
	m->arg = arg;
	m->threads.resize(threads);
	bool rev = reversed.load(std::memory_order_relaxed);
	for (unsigned slot = 0; slot < threads; slot++) {
		unsigned i = rev ? threads - 1 - slot : slot;
		m->threads[slot].idx = uint3{i % bx, i / bx % by, i / (bx * by)};
	}
	pc_emu_geom.grid = dim3{gx, gy, gz};
	pc_emu_geom.block = dim3{bx, by, bz};
	int rc = 0;
	for (unsigned z = 0; z < gz && rc == 0; z++) {
		for (unsigned y = 0; y < gy && rc == 0; y++) {
			for (unsigned x = 0; x < gx; x++) {
				pc_emu_geom.index = rev ? uint3{gx - 1 - x, gy - 1 - y, gz - 1 - z} : uint3{x, y, z};
				if (!m->runBlock(err, errlen)) {
					rc = -1;
					break;
				}
			}
		}
	}
	m->cur = nullptr;
	m->body = nullptr;
	m->arg = nullptr;
	return rc;
}
