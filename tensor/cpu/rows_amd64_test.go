//go:build amd64 && !noasm

package cpu

import (
	"testing"

	"golang.org/x/sys/cpu"
)

// TestRowsSIMD checks each width's assembly loops where the CPU has them,
// whichever width the backend picked.
func TestRowsSIMD(t *testing.T) {
	asm := func(f func(dst *float32, ds int, src *float32, ss int, rows, n int)) func([]float32, int, []float32, int, int, int) {
		return func(dst []float32, ds int, src []float32, ss int, rows, n int) { f(&dst[0], ds, &src[0], ss, rows, n) }
	}
	if cpu.X86.HasAVX2 {
		checkRows(t, "addRows8", asm(addRows8), true)
		checkRows(t, "copyRows8", asm(copyRows8), false)
	}
	if cpu.X86.HasAVX512F {
		checkRows(t, "addRows16", asm(addRows16), true)
		checkRows(t, "copyRows16", asm(copyRows16), false)
	}
}
