//go:build cudaemu

package emu

import (
	"strings"
	"testing"
	"unsafe"

	"github.com/pipecast/pipecast/tensor/cuda"
)

// TestLaunchChecks launches kernels wrongly: the emulator must say so
// rather than run them.
func TestLaunchChecks(t *testing.T) {
	d := NewDriver()
	defer d.Close()
	y, _ := d.Alloc(64 * 4)
	defer d.Free(y)
	n, v := int64(64), float32(1)
	grid, block := [3]uint32{1, 1, 1}, [3]uint32{256, 1, 1}
	args := []unsafe.Pointer{unsafe.Pointer(&y), unsafe.Pointer(&n), unsafe.Pointer(&v)}
	if err := d.Launch(cuda.KernelFill, grid, block, args); err != nil {
		t.Fatalf("a correct launch: %v", err)
	}
	got := make([]float32, 64)
	if err := d.Download(got, y); err != nil || got[0] != 1 || got[63] != 1 {
		t.Fatalf("after pc_fill with 1: got %v, %v; want ones", got, err)
	}
	stale := y + 1<<20
	n65 := int64(65)
	for _, tc := range []struct {
		name  string
		k     cuda.Kernel
		grid  [3]uint32
		args  []unsafe.Pointer
		wants string
	}{
		{"unknown kernel", cuda.Kernel(cuda.NumKernels), grid, args, "the header declares"},
		{"too few arguments", cuda.KernelFill, grid, args[:2], "2 arguments, the prototype has 3"},
		{"pointer outside memory", cuda.KernelFill, grid, []unsafe.Pointer{unsafe.Pointer(&stale), args[1], args[2]}, "not in an allocation"},
		{"empty grid", cuda.KernelFill, [3]uint32{0, 1, 1}, args, "invalid grid"},
		{"write past the end", cuda.KernelFill, grid, []unsafe.Pointer{args[0], unsafe.Pointer(&n65), args[2]}, "past the end"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := d.Launch(tc.k, tc.grid, block, tc.args)
			if err == nil || !strings.Contains(err.Error(), tc.wants) {
				t.Errorf("got error %v, want %q", err, tc.wants)
			}
		})
	}
}
