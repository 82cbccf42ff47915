//go:build cudaemu

package emu

// #include "sched.h"
import "C"

import "fmt"

// The self-test kernels of selftest.cc, by index.
const (
	selftestSum = iota
	selftestVisit
	selftestRotate
	selftestEarlyReturn
)

// runSelftest runs self-test kernel which on grid×block threads with out
// and n as its arguments (the tests cannot call C themselves).
func runSelftest(which int, grid, block [3]uint32, out []float32, n int64) error {
	var msg [512]C.char
	var p *C.float
	if len(out) > 0 {
		p = (*C.float)(&out[0])
	}
	rc := C.pc_emu_selftest(C.int(which), C.uint(grid[0]), C.uint(grid[1]), C.uint(grid[2]),
		C.uint(block[0]), C.uint(block[1]), C.uint(block[2]), p, C.longlong(n), &msg[0], C.int(len(msg)))
	if rc != 0 {
		return fmt.Errorf("self-test kernel %d grid %v block %v: %s", which, grid, block, C.GoString(&msg[0]))
	}
	return nil
}
