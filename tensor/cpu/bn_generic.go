//go:build !amd64 || noasm

package cpu

// bnSIMD is 0: the batch-norm helpers run their Go loops only.
const bnSIMD = 0

// bnRun returns 0: no values go to assembly loops.
func bnRun(n int) int { return 0 }

func bnShiftedSumSIMD(x *float32, n int, k float64, acc *[16]float64) {
	panic("cpu: no SIMD batch norm")
}

func bnGradientSumSIMD(x, dy *float32, n int, mean float64, acc *[16]float64) {
	panic("cpu: no SIMD batch norm")
}

func bnAffineSIMD(x, y *float32, n int, m, a, b float32) { panic("cpu: no SIMD batch norm") }

func bnGradientSIMD(x, dy, dx *float32, n int, m, p, q, r float32) {
	panic("cpu: no SIMD batch norm")
}

// elemSIMD is false: the element-wise kernels run their Go loops only.
const elemSIMD = false

func reluForward8(x, y *float32, n int) { panic("cpu: no SIMD element-wise loops") }

func reluBackward8(y, dy, dx *float32, n int) { panic("cpu: no SIMD element-wise loops") }

func add8(y, a, b *float32, n int) { panic("cpu: no SIMD element-wise loops") }

func addRows16(dst *float32, ds int, src *float32, ss int, rows, n int) {
	panic("cpu: no SIMD row loops")
}

func copyRows16(dst *float32, ds int, src *float32, ss int, rows, n int) {
	panic("cpu: no SIMD row loops")
}

func addRows8(dst *float32, ds int, src *float32, ss int, rows, n int) {
	panic("cpu: no SIMD row loops")
}

func copyRows8(dst *float32, ds int, src *float32, ss int, rows, n int) {
	panic("cpu: no SIMD row loops")
}
