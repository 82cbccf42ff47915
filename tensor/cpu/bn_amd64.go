//go:build amd64 && !noasm

package cpu

import "golang.org/x/sys/cpu"

// bnSIMD says the batch-norm helpers run their runs of 16 values in the
// AVX-512 loops of bn_amd64.s.
var bnSIMD = cpu.X86.HasAVX512F

//go:noescape
func bnShiftedSum16(x *float32, n int, k float64, acc *[16]float64)

//go:noescape
func bnGradientSum16(x, dy *float32, n int, mean float64, acc *[16]float64)

//go:noescape
func bnAffine16(x, y *float32, n int, m, a, b float32)

//go:noescape
func bnGradient16(x, dy, dx *float32, n int, m, p, q, r float32)
