package reference

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pipecast/pipecast/tensor"
)

// Finite-difference checks of the convolution, linear and GEMM
// references. Each is linear in each operand, so central differences have
// no truncation error at all; what is left is round-off, O(ε·|f|/h) ≈
// 1e-16·10/1e-3 ≈ 1e-12, and a tolerance of 1e-8 relative with a 1e-9 floor
// still leaves three orders of magnitude.
const (
	convGradStep = 1e-3
	convGradRTol = 1e-8
	convGradATol = 1e-9
)

func TestConv2DByHand(t *testing.T) {
	nine := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9} // one 3×3 image
	tests := []struct {
		name           string
		x              []float64
		h, w           int
		wt             []float64
		kh, kw         int
		bias           []float64
		p              tensor.Conv2DParams
		want           []float64
		wantOH, wantOW int
	}{
		{
			name: "2x2 ones stride 1", x: nine, h: 3, w: 3, wt: []float64{1, 1, 1, 1}, kh: 2, kw: 2,
			p:    tensor.Conv2DParams{StrideH: 1, StrideW: 1},
			want: []float64{12, 16, 24, 28}, wantOH: 2, wantOW: 2,
		},
		{
			// Windows at rows {−1, 0} and {1, 2}, columns likewise; the
			// padding contributes nothing.
			name: "2x2 ones stride 2 pad 1 bias", x: nine, h: 3, w: 3, wt: []float64{1, 1, 1, 1}, kh: 2, kw: 2,
			bias: []float64{0.5}, p: tensor.Conv2DParams{StrideH: 2, StrideW: 2, PadH: 1, PadW: 1},
			want: []float64{1.5, 5.5, 11.5, 28.5}, wantOH: 2, wantOW: 2,
		},
		{
			// Cross-correlation, not convolution: the kernel is not
			// flipped. 0·1+1·2+2·3, 1·1+2·2+3·3, 2·1+3·2+0·3.
			name: "1x3 pad (0,1)", x: []float64{1, 2, 3}, h: 1, w: 3, wt: []float64{1, 2, 3}, kh: 1, kw: 3,
			p:    tensor.Conv2DParams{StrideH: 1, StrideW: 1, PadW: 1},
			want: []float64{8, 14, 8}, wantOH: 1, wantOW: 3,
		},
		{
			name: "3x1 stride 2 no pad", x: nine, h: 3, w: 3, wt: []float64{1, 0, -1}, kh: 3, kw: 1,
			p:    tensor.Conv2DParams{StrideH: 2, StrideW: 2},
			want: []float64{-6, -6}, wantOH: 1, wantOW: 2,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if oh, ow := tc.p.OutSize(tc.h, tc.w, tc.kh, tc.kw); oh != tc.wantOH || ow != tc.wantOW {
				t.Fatalf("output size: got %d×%d, want %d×%d", oh, ow, tc.wantOH, tc.wantOW)
			}
			got := Conv2D(tc.x, 1, 1, tc.h, tc.w, tc.wt, 1, tc.kh, tc.kw, tc.bias, tc.p)
			closeTo(t, "y", got, tc.want, 0, 0)
		})
	}
}

// A 1×1 convolution is a linear layer applied at every pixel: an
// independent check of the layout of x, wt and y.
func TestConv2D1x1IsLinearPerPixel(t *testing.T) {
	const n, c, h, w, o = 2, 3, 2, 3, 4
	rng := rand.New(rand.NewPCG(1, 2))
	x, wt, bias := uniform(rng, n*c*h*w, -1, 1), uniform(rng, o*c, -1, 1), uniform(rng, o, -1, 1)
	y := Conv2D(x, n, c, h, w, wt, o, 1, 1, bias, tensor.Conv2DParams{StrideH: 1, StrideW: 1})
	for b := 0; b < n; b++ {
		for pix := 0; pix < h*w; pix++ {
			xp := make([]float64, c)
			for ch := range xp {
				xp[ch] = x[(b*c+ch)*h*w+pix]
			}
			yp := Linear(xp, 1, c, wt, o, bias)
			for q := 0; q < o; q++ {
				if got := y[(b*o+q)*h*w+pix]; math.Abs(got-yp[q]) > 1e-12 {
					t.Fatalf("sample %d pixel %d channel %d: got %v, want %v", b, pix, q, got, yp[q])
				}
			}
		}
	}
}

func TestConv2DBackwardMatchesFiniteDifferences(t *testing.T) {
	tests := []struct {
		name           string
		n, c, h, w, o  int
		kh, kw         int
		p              tensor.Conv2DParams
		bias           bool
		wantOH, wantOW int
	}{
		{name: "3x3 stride 1 pad 1", n: 2, c: 2, h: 4, w: 5, o: 3, kh: 3, kw: 3,
			p: tensor.Conv2DParams{StrideH: 1, StrideW: 1, PadH: 1, PadW: 1}, bias: true, wantOH: 4, wantOW: 5},
		{name: "3x3 stride 2 pad 1", n: 1, c: 3, h: 5, w: 6, o: 2, kh: 3, kw: 3,
			p: tensor.Conv2DParams{StrideH: 2, StrideW: 2, PadH: 1, PadW: 1}, wantOH: 3, wantOW: 3},
		{name: "3x3 stride 2 no pad odd input", n: 2, c: 1, h: 5, w: 7, o: 2, kh: 3, kw: 3,
			p: tensor.Conv2DParams{StrideH: 2, StrideW: 2}, bias: true, wantOH: 2, wantOW: 3},
		{name: "2x3 stride (2,1) pad (0,1)", n: 2, c: 2, h: 5, w: 4, o: 2, kh: 2, kw: 3,
			p: tensor.Conv2DParams{StrideH: 2, StrideW: 1, PadW: 1}, bias: true, wantOH: 2, wantOW: 4},
		{name: "1x1 stride 2", n: 2, c: 3, h: 5, w: 5, o: 2, kh: 1, kw: 1,
			p: tensor.Conv2DParams{StrideH: 2, StrideW: 2}, wantOH: 3, wantOW: 3},
		{name: "5x5 stride 2 pad 2 on 3x4", n: 1, c: 2, h: 3, w: 4, o: 2, kh: 5, kw: 5,
			p: tensor.Conv2DParams{StrideH: 2, StrideW: 2, PadH: 2, PadW: 2}, bias: true, wantOH: 2, wantOW: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(3, uint64(len(tc.name))))
			oh, ow := tc.p.OutSize(tc.h, tc.w, tc.kh, tc.kw)
			if oh != tc.wantOH || ow != tc.wantOW {
				t.Fatalf("output size: got %d×%d, want %d×%d", oh, ow, tc.wantOH, tc.wantOW)
			}
			x := uniform(rng, tc.n*tc.c*tc.h*tc.w, -1, 1)
			wt := uniform(rng, tc.o*tc.c*tc.kh*tc.kw, -1, 1)
			var bias []float64
			if tc.bias {
				bias = uniform(rng, tc.o, -1, 1)
			}
			r := uniform(rng, tc.n*tc.o*oh*ow, -1, 1)
			f := func([]float64) float64 {
				return dot(Conv2D(x, tc.n, tc.c, tc.h, tc.w, wt, tc.o, tc.kh, tc.kw, bias, tc.p), r)
			}

			dx := Conv2DBackwardData(r, tc.n, tc.c, tc.h, tc.w, wt, tc.o, tc.kh, tc.kw, tc.p)
			closeTo(t, "dx", dx, numericGrad(f, x, convGradStep), convGradRTol, convGradATol)
			dw, db := Conv2DBackwardFilter(x, tc.n, tc.c, tc.h, tc.w, r, tc.o, tc.kh, tc.kw, tc.p)
			closeTo(t, "dw", dw, numericGrad(f, wt, convGradStep), convGradRTol, convGradATol)
			if bias != nil {
				closeTo(t, "dbias", db, numericGrad(f, bias, convGradStep), convGradRTol, convGradATol)
			}
		})
	}
}

func TestConv2DPanicsOnBadSizes(t *testing.T) {
	unit := tensor.Conv2DParams{StrideH: 1, StrideW: 1}
	tests := []struct {
		name string
		fn   func()
	}{
		{"x too short", func() { Conv2D(make([]float64, 8), 1, 1, 3, 3, make([]float64, 1), 1, 1, 1, nil, unit) }},
		{"weights too short", func() { Conv2D(make([]float64, 9), 1, 1, 3, 3, make([]float64, 3), 1, 2, 2, nil, unit) }},
		{"kernel larger than input", func() { Conv2D(make([]float64, 4), 1, 1, 2, 2, make([]float64, 9), 1, 3, 3, nil, unit) }},
		{"zero stride", func() {
			Conv2D(make([]float64, 9), 1, 1, 3, 3, make([]float64, 1), 1, 1, 1, nil, tensor.Conv2DParams{StrideW: 1})
		}},
		{"dy too short", func() { Conv2DBackwardData(make([]float64, 3), 1, 1, 3, 3, make([]float64, 4), 1, 2, 2, unit) }},
		{"bias of the wrong length", func() {
			Conv2D(make([]float64, 9), 1, 1, 3, 3, make([]float64, 1), 1, 1, 1, make([]float64, 2), unit)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("got no panic, want one")
				}
			}()
			tc.fn()
		})
	}
}
