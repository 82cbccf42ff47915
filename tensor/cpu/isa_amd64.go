//go:build amd64

package cpu

import (
	"strings"

	"golang.org/x/sys/cpu"
)

// InstructionSets names the vector instruction sets of this CPU that the
// backend's kernels can use, e.g. "avx512f avx2 fma".
func InstructionSets() string {
	var s []string
	for _, f := range []struct {
		name string
		has  bool
	}{{"avx512f", cpu.X86.HasAVX512F}, {"avx2", cpu.X86.HasAVX2}, {"fma", cpu.X86.HasFMA}} {
		if f.has {
			s = append(s, f.name)
		}
	}
	if len(s) == 0 {
		return "sse2"
	}
	return strings.Join(s, " ")
}
