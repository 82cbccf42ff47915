package reference

import (
	"math/rand/v2"
	"testing"

	"github.com/pipecast/pipecast/tensor"
)

// poolDistinct returns n values in [−1, 1) that differ by at least 1/n
// from one another, so that no max-pool window holds a tie and a small
// finite-difference step cannot change which element wins.
func poolDistinct(rng *rand.Rand, n int) []float64 {
	x := make([]float64, n)
	for i, k := range rng.Perm(n) {
		x[i] = 2*float64(k)/float64(n) - 1
	}
	return x
}

func TestMaxPool2DByHand(t *testing.T) {
	// A 3×4 plane, 2×2 windows with stride 2 and padding 1: the windows
	// at the corners hold one input element, those along the edges two.
	x := []float64{
		1, 5, 5, 2,
		-3, 5, 4, -1,
		-7, -8, -6, -9,
	}
	p := tensor.Pool2DParams{KH: 2, KW: 2, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1}
	y := MaxPool2D(x, 1, 1, 3, 4, p)
	closeTo(t, "y", y, []float64{1, 5, 2, -3, 5, -1}, 0, 0)
	// The window of output (0, 1) holds 5, 5 in row 0: the first one
	// takes its gradient; output (1, 1)'s window holds 5, 4, -8, -6 and
	// routes to the 5 in row 1. The −∞ padding never wins over −7..−9.
	dx := MaxPool2DBackward(x, []float64{1, 2, 3, 4, 5, 6}, 1, 1, 3, 4, p)
	closeTo(t, "dx", dx, []float64{
		1, 2, 0, 3,
		4, 5, 0, 6,
		0, 0, 0, 0,
	}, 0, 0)
}

func TestMaxPool2DFirstMaximumOnTies(t *testing.T) {
	// A constant plane: every overlapping 3×3 window (stride 2, no
	// padding) sends its gradient to its top-left element.
	x := make([]float64, 5*5)
	p := tensor.Pool2DParams{KH: 3, KW: 3, StrideH: 2, StrideW: 2}
	dx := MaxPool2DBackward(x, []float64{1, 10, 100, 1000}, 1, 1, 5, 5, p)
	want := make([]float64, 25)
	want[0], want[2], want[10], want[12] = 1, 10, 100, 1000
	closeTo(t, "dx", dx, want, 0, 0)
}

func TestAvgPool2DByHand(t *testing.T) {
	// 3×3 windows, stride 1, padding 1 on a 2×2 plane: every window
	// holds the whole plane and divides by 9, padding included.
	p := tensor.Pool2DParams{KH: 3, KW: 3, StrideH: 1, StrideW: 1, PadH: 1, PadW: 1}
	y := AvgPool2D([]float64{1, 2, 3, 12}, 1, 1, 2, 2, p)
	closeTo(t, "y", y, []float64{2, 2, 2, 2}, 1e-15, 0)
	dx := AvgPool2DBackward([]float64{9, 18, 0, 9}, 1, 1, 2, 2, p)
	closeTo(t, "dx", dx, []float64{4, 4, 4, 4}, 1e-15, 0)
}

func TestAdaptiveBin(t *testing.T) {
	tests := []struct {
		name    string
		in, out int
		want    [][2]int
	}{
		{"5 to 3 overlaps", 5, 3, [][2]int{{0, 2}, {1, 4}, {3, 5}}},
		{"8 to 7", 8, 7, [][2]int{{0, 2}, {1, 3}, {2, 4}, {3, 5}, {4, 6}, {5, 7}, {6, 8}}},
		{"2 to 5 repeats", 2, 5, [][2]int{{0, 1}, {0, 1}, {0, 2}, {1, 2}, {1, 2}}},
		{"7 to 7 identity", 7, 7, [][2]int{{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 5}, {5, 6}, {6, 7}}},
		{"6 to 1 global", 6, 1, [][2]int{{0, 6}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for i, w := range tc.want {
				if lo, hi := AdaptiveBin(i, tc.in, tc.out); lo != w[0] || hi != w[1] {
					t.Errorf("cell %d: got [%d, %d), want [%d, %d)", i, lo, hi, w[0], w[1])
				}
			}
		})
	}
}

func TestAdaptiveAvgPool2DByHand(t *testing.T) {
	// 1×5 to 1×3: cells [0,2), [1,4), [3,5).
	y := AdaptiveAvgPool2D([]float64{1, 3, 5, 7, 9}, 1, 1, 1, 5, 1, 3)
	closeTo(t, "y", y, []float64{2, 5, 8}, 1e-15, 0)
	dx := AdaptiveAvgPool2DBackward([]float64{2, 3, 4}, 1, 1, 1, 5, 1, 3)
	closeTo(t, "dx", dx, []float64{1, 1 + 1, 1, 1 + 2, 2}, 1e-15, 0)
}

func TestPoolBackwardsMatchFiniteDifferences(t *testing.T) {
	tests := []struct {
		name       string
		n, c, h, w int
		p          tensor.Pool2DParams
	}{
		{"2x2 stride 2", 2, 2, 6, 5, tensor.Pool2DParams{KH: 2, KW: 2, StrideH: 2, StrideW: 2}},
		{"3x3 stride 2 pad 1", 1, 2, 7, 6, tensor.Pool2DParams{KH: 3, KW: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1}},
		{"3x3 stride 1 pad 1", 1, 1, 5, 4, tensor.Pool2DParams{KH: 3, KW: 3, StrideH: 1, StrideW: 1, PadH: 1, PadW: 1}},
		{"3x2 stride 2x1 pad 1x0", 2, 1, 5, 5, tensor.Pool2DParams{KH: 3, KW: 2, StrideH: 2, StrideW: 1, PadH: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(tc.h*10+tc.w), 5))
			x := poolDistinct(rng, tc.n*tc.c*tc.h*tc.w)
			oh, ow := tc.p.OutSize(tc.h, tc.w)
			r := uniform(rng, tc.n*tc.c*oh*ow, -1, 1)

			f := func([]float64) float64 { return dot(MaxPool2D(x, tc.n, tc.c, tc.h, tc.w, tc.p), r) }
			dx := MaxPool2DBackward(x, r, tc.n, tc.c, tc.h, tc.w, tc.p)
			closeTo(t, "max dx", dx, numericGrad(f, x, bnGradStep), bnGradRTol, bnGradATol)

			f = func([]float64) float64 { return dot(AvgPool2D(x, tc.n, tc.c, tc.h, tc.w, tc.p), r) }
			dx = AvgPool2DBackward(r, tc.n, tc.c, tc.h, tc.w, tc.p)
			closeTo(t, "avg dx", dx, numericGrad(f, x, bnGradStep), bnGradRTol, bnGradATol)
		})
	}
}

func TestAdaptiveAvgPool2DBackwardMatchesFiniteDifferences(t *testing.T) {
	tests := []struct {
		name               string
		n, c, h, w, oh, ow int
	}{
		{"8x8 to 7x7", 1, 2, 8, 8, 7, 7},
		{"5x5 to 7x7 (upsampling)", 2, 1, 5, 5, 7, 7},
		{"13x11 to 7x7", 1, 1, 13, 11, 7, 7},
		{"6x5 to 1x1", 2, 2, 6, 5, 1, 1},
		{"4x9 to 3x2", 1, 1, 4, 9, 3, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(tc.h*10+tc.w), 6))
			x := uniform(rng, tc.n*tc.c*tc.h*tc.w, -1, 1)
			r := uniform(rng, tc.n*tc.c*tc.oh*tc.ow, -1, 1)
			f := func([]float64) float64 { return dot(AdaptiveAvgPool2D(x, tc.n, tc.c, tc.h, tc.w, tc.oh, tc.ow), r) }
			dx := AdaptiveAvgPool2DBackward(r, tc.n, tc.c, tc.h, tc.w, tc.oh, tc.ow)
			closeTo(t, "dx", dx, numericGrad(f, x, bnGradStep), bnGradRTol, bnGradATol)
		})
	}
}
