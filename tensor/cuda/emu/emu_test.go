//go:build cudaemu

package emu

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pipecast/pipecast/tensor"
	"github.com/pipecast/pipecast/tensor/cuda"
	"github.com/pipecast/pipecast/tensor/tensortest"
)

// TestSuite runs the shared backend suite on the GPU backend over the
// emulator: every kernel against the float64 references. It logs how
// often the suite launched each kernel, and which it never did.
func TestSuite(t *testing.T) {
	var before [cuda.NumKernels]int64
	for k := range before {
		before[k] = launches[k].Load()
	}
	tensortest.Run(t, func(index, threads int) tensor.Device { return Open(index) })
	var counts, unused []string
	for k := range before {
		name := cuda.Kernel(k).Name()
		n := launches[k].Load() - before[k]
		counts = append(counts, fmt.Sprintf("%s %d", name, n))
		if n == 0 {
			unused = append(unused, name)
		}
	}
	t.Logf("launches: %s", strings.Join(counts, ", "))
	if len(unused) > 0 {
		t.Logf("the suite launched no %s", strings.Join(unused, ", "))
	}
}

// TestSuiteReversed runs the suite again with the blocks and threads of
// every launch in the reverse order: a kernel that needs a barrier it
// lacks, or whose blocks depend on one another, fails in one order or
// the other.
func TestSuiteReversed(t *testing.T) {
	if testing.Short() {
		t.Skip("the suite in the other order: not under -short")
	}
	setReversed(true)
	defer setReversed(false)
	tensortest.Run(t, func(index, threads int) tensor.Device { return Open(index) })
}

func TestRegistered(t *testing.T) {
	d, err := tensor.Open(BackendName, tensor.Options{Index: 3, Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.Name() != "cuda-emu:3" || d.Backend() != BackendName {
		t.Errorf("got device %s of backend %s, want cuda-emu:3 of %s", d.Name(), d.Backend(), BackendName)
	}
	a, ok := d.(tensor.Accelerator)
	if !ok {
		t.Fatalf("a %T is not a tensor.Accelerator", d)
	}
	if i := a.AcceleratorInfo(); i.Model != "pipecast CUDA emulator" || i.Ordinal != 3 || i.Share != "whole" || i.TotalBytes != TotalBytes {
		t.Errorf("got %+v, want the emulator, ordinal 3, whole, %d bytes", i, int64(TotalBytes))
	}
}
