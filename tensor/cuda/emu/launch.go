//go:build cudaemu

package emu

/*
#cgo CXXFLAGS: -std=c++17 -O2 -Wno-unknown-pragmas
#include "sched.h"
*/
import "C"

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"unsafe"

	"github.com/pipecast/pipecast/tensor/cuda"
	"github.com/pipecast/pipecast/tensor/cuda/internal/abi"
	"github.com/pipecast/pipecast/tensor/cuda/kernels"
)

// The go command tracks no file that cgo includes from outside this
// folder, such as ../kernels/all.cu and the files it includes: this
// reference to their embedded copy makes them inputs of the package's
// build, so that editing a kernel rebuilds the emulator.
var _ = kernels.Sources

// prototypes are the kernels of kernels.h, which Launch checks every
// launch's arguments against; prototypesErr says why there are none.
var prototypes, prototypesErr = parsePrototypes()

func parsePrototypes() ([]abi.Kernel, error) {
	ks, err := abi.Parse([]byte(kernels.Header))
	if err != nil {
		return nil, fmt.Errorf("parse kernels.h: %w", err)
	}
	if len(ks) != cuda.NumKernels {
		return nil, fmt.Errorf("kernels.h declares %d kernels, package cuda was generated for %d: run go generate ./tensor/cuda", len(ks), cuda.NumKernels)
	}
	return ks, nil
}

// launches counts the launches of each kernel, for the tests to see what
// they covered.
var launches [cuda.NumKernels]atomic.Int64

// Launch runs kernel k on grid×block threads and returns when it has
// completed. It fails for a geometry CUDA rejects, for a block whose
// threads do not all reach a barrier, and for a kernel that wrote into
// the guards around an allocation.
func (d *Driver) Launch(k cuda.Kernel, grid, block [3]uint32, args []unsafe.Pointer) error {
	if k < 0 || int(k) >= cuda.NumKernels {
		return fmt.Errorf("launch of kernel %d: the header declares %d", int(k), cuda.NumKernels)
	}
	if err := d.checkArgs(k, args); err != nil {
		return fmt.Errorf("launch %s: %w", k.Name(), err)
	}
	// C may read the arguments' values, Go memory, through args only
	// while they are pinned.
	var pin runtime.Pinner
	defer pin.Unpin()
	for _, a := range args {
		pin.Pin(a)
	}
	var argv *unsafe.Pointer
	if len(args) > 0 {
		argv = &args[0]
	}
	var msg [512]C.char
	rc := C.pc_emu_launch(C.int(k), C.uint(grid[0]), C.uint(grid[1]), C.uint(grid[2]),
		C.uint(block[0]), C.uint(block[1]), C.uint(block[2]), argv, &msg[0], C.int(len(msg)))
	launches[k].Add(1)
	if rc != 0 {
		return fmt.Errorf("launch %s grid %v block %v: %s", k.Name(), grid, block, C.GoString(&msg[0]))
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, s := range d.spans {
		if err := s.checkGuards(); err != nil {
			return fmt.Errorf("launch %s grid %v block %v: allocation %#x: %w", k.Name(), grid, block, uintptr(s.base), err)
		}
	}
	return nil
}

// checkArgs checks args against k's prototype: their count, and that
// every pointer is NULL or points into (or just past) a live allocation
// of this device.
func (d *Driver) checkArgs(k cuda.Kernel, args []unsafe.Pointer) error {
	if prototypesErr != nil {
		return prototypesErr
	}
	params := prototypes[k].Params
	if len(args) != len(params) {
		return fmt.Errorf("%d arguments, the prototype has %d", len(args), len(params))
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return errClosed
	}
	for i, p := range params {
		if args[i] == nil {
			return fmt.Errorf("argument %d (%s): nil", i, p.Name)
		}
		switch p.Type {
		case abi.FloatPtr, abi.ConstFloatPtr, abi.ConstIntPtr, abi.DoublePtr:
			v := *(*cuda.Ptr)(args[i])
			if _, ok := d.find(v); v != 0 && !ok {
				return fmt.Errorf("argument %d (%s %s): %#x is not in an allocation of this device", i, p.Type, p.Name, uintptr(v))
			}
		}
	}
	return nil
}

// setReversed makes later launches run their blocks, and the threads of
// each block, last first (see sched.cc), or first first again.
func setReversed(on bool) {
	v := 0
	if on {
		v = 1
	}
	C.pc_emu_set_reversed(C.int(v))
}
