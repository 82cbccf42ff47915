//go:build !amd64 || noasm

package cpu

// bnSIMD is false: the batch-norm helpers run their Go loops only.
const bnSIMD = false

func bnShiftedSum16(x *float32, n int, k float64, acc *[16]float64) { panic("cpu: no SIMD batch norm") }

func bnGradientSum16(x, dy *float32, n int, mean float64, acc *[16]float64) {
	panic("cpu: no SIMD batch norm")
}

func bnAffine16(x, y *float32, n int, m, a, b float32) { panic("cpu: no SIMD batch norm") }

func bnGradient16(x, dy, dx *float32, n int, m, p, q, r float32) { panic("cpu: no SIMD batch norm") }
