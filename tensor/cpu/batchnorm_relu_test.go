package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pipecast/pipecast/tensor"
)

// TestBatchNormReLUMatchesUnfused runs BatchNormReLUTrain and
// BatchNormReLUBackward against BatchNormTrain, ReLUForward, ReLUBackward
// and BatchNormBackward on the same inputs: every output, saved statistic
// and parameter gradient bit for bit, on [N, C] inputs, 1×1 and small
// maps, and maps larger than one masking buffer (the backward's sums
// then agree to float64 rounding, the rest still bit for bit). The
// inputs hold NaNs, which ReLU keeps, and exact zeros.
func TestBatchNormReLUMatchesUnfused(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, shape := range [][]int{{16, 70}, {4, 100, 1, 1}, {3, 5, 4, 4}, {2, 7, 9, 9}, {2, 3, 100, 90}} {
		for _, threads := range []int{1, 2} {
			name := fmt.Sprintf("%v/threads=%d", shape, threads)
			d := New(tensor.Options{Threads: threads})
			c := shape[1]
			x := randTensor(d, rng, shape...)
			Data(x)[3] = float32(math.NaN())
			Data(x)[5] = 0
			dy := randTensor(d, rng, shape...)
			gamma, beta := randTensor(d, rng, c), randTensor(d, rng, c)
			p := tensor.DefaultBatchNorm()
			run := func(fused bool) (out [][]float32) {
				y := d.Alloc(tensor.Activations, shape...)
				rm, rv := d.Alloc(tensor.Weights, c), d.Alloc(tensor.Weights, c)
				d.Fill(rv, 1)
				sm, si := d.Alloc(tensor.Activations, c), d.Alloc(tensor.Activations, c)
				dx := d.Alloc(tensor.Activations, shape...)
				dg, db := d.Alloc(tensor.Gradients, c), d.Alloc(tensor.Gradients, c)
				if fused {
					d.BatchNormReLUTrain(x, gamma, beta, y, rm, rv, sm, si, p)
					d.BatchNormReLUBackward(x, y, dy, gamma, sm, si, dx, dg, db)
				} else {
					pre := d.Alloc(tensor.Activations, shape...)
					d.BatchNormTrain(x, gamma, beta, pre, rm, rv, sm, si, p)
					d.ReLUForward(pre, y)
					dpre := d.Alloc(tensor.Activations, shape...)
					d.ReLUBackward(y, dy, dpre)
					d.BatchNormBackward(x, dpre, gamma, sm, si, dx, dg, db)
				}
				for _, t := range []*tensor.Tensor{y, rm, rv, sm, si, dx, dg, db} {
					out = append(out, append([]float32(nil), Data(t)...))
				}
				return out
			}
			want, got := run(false), run(true)
			sums := shape[0]*shape[len(shape)-1] > bnMaskMax && len(shape) == 4 && shape[2]*shape[3] > bnMaskMax
			for i, name2 := range []string{"y", "running mean", "running var", "saved mean", "saved invstd", "dx", "dgamma", "dbeta"} {
				for j := range want[i] {
					w, g := want[i][j], got[i][j]
					if math.Float32bits(w) == math.Float32bits(g) || (w != w && g != g) {
						continue
					}
					if sums && i >= 5 && math.Abs(float64(w-g)) <= 1e-5*(1+math.Abs(float64(w))) {
						continue // float64 sums taken in two buffers
					}
					t.Fatalf("%s: %s[%d] fused %v, unfused %v", name, name2, j, g, w)
				}
			}
			d.Close()
		}
	}
}

// randTensor returns a tensor of shape on d with values uniform in
// [−1, 1).
func randTensor(d *Device, rng *rand.Rand, shape ...int) *tensor.Tensor {
	t := d.Alloc(tensor.Activations, shape...)
	for i := range Data(t) {
		Data(t)[i] = rng.Float32()*2 - 1
	}
	return t
}
