//go:build amd64 && !noasm

package cpu

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"golang.org/x/sys/cpu"
)

// TestPackersMatchPortable checks the assembly packers of every kernel
// the CPU runs against the portable packA and packB, bit for bit: both
// transposes, ragged slivers, kc around the multiples of 8 the avx2
// packers move at once, and leading dimensions wider than the blocks.
func TestPackersMatchPortable(t *testing.T) {
	var kerns []gemmKernel
	if cpu.X86.HasAVX512F {
		kerns = append(kerns, gemmKernelAVX512)
	}
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		kerns = append(kerns, gemmKernelAVX2)
	}
	if len(kerns) == 0 {
		t.Skip("neither avx2 nor avx512 on this CPU")
	}
	rng := rand.New(rand.NewPCG(7, 8))
	for _, kern := range kerns {
		for _, mc := range []int{1, 5, 6, 12, 13, 30, 35} {
			for _, kc := range []int{1, 7, 8, 9, 16, 23, 64} {
				for _, trans := range []bool{false, true} {
					ld := max(mc, kc) + 3
					src := make([]float32, (max(mc, kc)+2)*ld)
					for i := range src {
						src[i] = rng.Float32()*2 - 1
					}
					const ic, pc = 1, 2
					name := fmt.Sprintf("%s/mc=%d,kc=%d,trans=%v", kern.name, mc, kc, trans)
					size := kc * max(roundUp(mc, kern.mr), roundUp(mc, kern.nr))
					want, got := make([]float32, size), make([]float32, size)
					packA(want, trans, src, ld, ic, pc, mc, kc, kern.mr, -0.75)
					kern.packA(got, trans, src, ld, ic, pc, mc, kc, kern.mr, -0.75)
					if !slices.Equal(got[:kc*roundUp(mc, kern.mr)], want[:kc*roundUp(mc, kern.mr)]) {
						t.Errorf("packA %s: differs from the portable packing", name)
					}
					// B: pc steps from pc, mc columns from jc = ic; its
					// transposed layout is the other one of A's.
					clear(want)
					clear(got)
					packB(want, trans, src, ld, pc, ic, kc, mc, kern.nr)
					kern.packB(got, trans, src, ld, pc, ic, kc, mc, kern.nr)
					if !slices.Equal(got[:kc*roundUp(mc, kern.nr)], want[:kc*roundUp(mc, kern.nr)]) {
						t.Errorf("packB %s: differs from the portable packing", name)
					}
				}
			}
		}
	}
}
