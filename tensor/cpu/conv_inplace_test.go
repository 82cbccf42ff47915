package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pipecast/pipecast/tensor"
)

// TestConvInPlaceMatchesGathered checks that convolutions whose groups of
// samples are multiplied in place (convInPlace) compute what the gathered
// and scattered products compute: bit for bit without a bias (the same
// products, accumulated in the same order), and to float32 round-off with
// one (the bias is then added first rather than last). The shapes have
// groups of several samples whose maps are whole slivers of the kernel
// (8×8 and 16×16 outputs), 1×1 and 3×3, on one thread and on two.
func TestConvInPlaceMatchesGathered(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	vals := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	type shape struct{ n, c, o, h, kh, pad int }
	for _, sh := range []shape{{8, 64, 32, 8, 1, 0}, {6, 24, 40, 16, 1, 0}, {8, 16, 24, 8, 3, 1}, {4, 300, 20, 8, 1, 0}} {
		for _, threads := range []int{1, 2} {
			for _, bias := range []bool{false, true} {
				name := fmt.Sprintf("%+v/threads %d/bias %v", sh, threads, bias)
				p := tensor.Conv2DParams{StrideH: 1, StrideW: 1, PadH: sh.pad, PadW: sh.pad}
				d := New(tensor.Options{Threads: threads})
				x := tensor.FromHost(d, tensor.Activations, tensor.Shape{sh.n, sh.c, sh.h, sh.h}, vals(sh.n*sh.c*sh.h*sh.h))
				w := tensor.FromHost(d, tensor.Weights, tensor.Shape{sh.o, sh.c, sh.kh, sh.kh}, vals(sh.o*sh.c*sh.kh*sh.kh))
				dy := tensor.FromHost(d, tensor.Activations, tensor.Shape{sh.n, sh.o, sh.h, sh.h}, vals(sh.n*sh.o*sh.h*sh.h))
				var b *tensor.Tensor
				if bias {
					b = tensor.FromHost(d, tensor.Weights, tensor.Shape{sh.o}, vals(sh.o))
				}
				g := convCheck("test", x, w, dy, p)
				if pl := newConvPlan(ConvForward, g, threads, d.ownThreads()); pl.group < 2 || g.pixels()%kernel.nr != 0 {
					t.Fatalf("%s: groups of %d samples of %d pixels: the shape does not test products in place", name, pl.group, g.pixels())
				}
				run := func(inPlace bool) (y, dx []float32) {
					old := convInPlace
					convInPlace = inPlace
					defer func() { convInPlace = old }()
					ty := d.Alloc(tensor.Activations, sh.n, sh.o, sh.h, sh.h)
					tdx := d.Alloc(tensor.Activations, sh.n, sh.c, sh.h, sh.h)
					d.Conv2DForward(x, w, b, ty, p)
					d.Conv2DBackwardData(dy, w, tdx, p)
					return tensor.ToHost(ty), tensor.ToHost(tdx)
				}
				y, dx := run(true)
				wy, wdx := run(false)
				for i := range wdx {
					if math.Float32bits(dx[i]) != math.Float32bits(wdx[i]) {
						t.Fatalf("%s: dx[%d] = %v in place, %v gathered", name, i, dx[i], wdx[i])
					}
				}
				for i := range wy {
					same := math.Float32bits(y[i]) == math.Float32bits(wy[i])
					if !same && (!bias || math.Abs(float64(y[i]-wy[i])) > 1e-5*(1+math.Abs(float64(wy[i])))) {
						t.Fatalf("%s: y[%d] = %v in place, %v gathered", name, i, y[i], wy[i])
					}
				}
				d.Close()
			}
		}
	}
}
