//go:build amd64 && !noasm

package cpu

import (
	"os"

	"golang.org/x/sys/cpu"
)

// bnSIMD is the length of the runs the batch-norm helpers hand to
// assembly: 16 for the AVX-512 loops of bn_amd64.s, 8 for the AVX2 loops
// of bn_avx2_amd64.s (a CPU without AVX-512, or PIPECAST_GEMM_KERNEL=avx2,
// which runs an AVX-512 CPU's AVX2 paths throughout, as an AVX2-only CPU
// would), 0 for the Go loops alone (no AVX2 and FMA, or
// PIPECAST_GEMM_KERNEL=go).
var bnSIMD = bnWidth(os.Getenv("PIPECAST_GEMM_KERNEL"))

// bnWidth returns bnSIMD for the CPU and a PIPECAST_GEMM_KERNEL value.
func bnWidth(kernel string) int {
	avx2 := cpu.X86.HasAVX2 && cpu.X86.HasFMA
	switch {
	case kernel == "go" || !avx2:
		return 0
	case cpu.X86.HasAVX512F && kernel != "avx2":
		return 16
	}
	return 8
}

// bnRun returns how many of n values the assembly loops take: the
// multiple of bnSIMD at most n.
func bnRun(n int) int {
	if bnSIMD == 0 {
		return 0
	}
	return n &^ (bnSIMD - 1)
}

// bnShiftedSumSIMD, bnGradientSumSIMD, bnAffineSIMD and bnGradientSIMD run
// a run of bnRun's length in the loops of bnSIMD's width.

func bnShiftedSumSIMD(x *float32, n int, k float64, acc *[16]float64) {
	if bnSIMD == 16 {
		bnShiftedSum16(x, n, k, acc)
		return
	}
	bnShiftedSum8(x, n, k, acc)
}

func bnGradientSumSIMD(x, dy *float32, n int, mean float64, acc *[16]float64) {
	if bnSIMD == 16 {
		bnGradientSum16(x, dy, n, mean, acc)
		return
	}
	bnGradientSum8(x, dy, n, mean, acc)
}

func bnAffineSIMD(x, y *float32, n int, m, a, b float32) {
	if bnSIMD == 16 {
		bnAffine16(x, y, n, m, a, b)
		return
	}
	bnAffine8(x, y, n, m, a, b)
}

func bnGradientSIMD(x, dy, dx *float32, n int, m, p, q, r float32) {
	if bnSIMD == 16 {
		bnGradient16(x, dy, dx, n, m, p, q, r)
		return
	}
	bnGradient8(x, dy, dx, n, m, p, q, r)
}

//go:noescape
func bnShiftedSum16(x *float32, n int, k float64, acc *[16]float64)

//go:noescape
func bnGradientSum16(x, dy *float32, n int, mean float64, acc *[16]float64)

//go:noescape
func bnAffine16(x, y *float32, n int, m, a, b float32)

//go:noescape
func bnGradient16(x, dy, dx *float32, n int, m, p, q, r float32)

//go:noescape
func bnShiftedSum8(x *float32, n int, k float64, acc *[16]float64)

//go:noescape
func bnGradientSum8(x, dy *float32, n int, mean float64, acc *[16]float64)

//go:noescape
func bnAffine8(x, y *float32, n int, m, a, b float32)

//go:noescape
func bnGradient8(x, dy, dx *float32, n int, m, p, q, r float32)

// elemSIMD says the element-wise kernels (ReLU, Add) run their runs of 8
// in the AVX2 loops of elementwise_amd64.s: on CPUs with AVX2, unless
// PIPECAST_GEMM_KERNEL=go asks for the portable paths.
var elemSIMD = cpu.X86.HasAVX2 && os.Getenv("PIPECAST_GEMM_KERNEL") != "go"

//go:noescape
func reluForward8(x, y *float32, n int)

//go:noescape
func reluBackward8(y, dy, dx *float32, n int)

//go:noescape
func add8(y, a, b *float32, n int)

// The strided row loops of rows_amd64.s, which addRows and copyRows call.

//go:noescape
func addRows16(dst *float32, ds int, src *float32, ss int, rows, n int)

//go:noescape
func copyRows16(dst *float32, ds int, src *float32, ss int, rows, n int)

//go:noescape
func addRows8(dst *float32, ds int, src *float32, ss int, rows, n int)

//go:noescape
func copyRows8(dst *float32, ds int, src *float32, ss int, rows, n int)
