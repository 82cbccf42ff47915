package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pipecast/pipecast/tensor"
)

// paddedShapes are stride-1 convolutions with output rows of 4 to 16
// values: 3×3, 5×5, 1×7 and 7×1 kernels, with and without padding,
// square and not.
var paddedShapes = []struct{ c, h, w, kh, kw, ph, pw int }{
	{3, 8, 8, 3, 3, 1, 1}, {5, 4, 4, 3, 3, 1, 1}, {2, 16, 16, 3, 3, 1, 1},
	{4, 10, 10, 3, 3, 0, 0}, {3, 8, 8, 5, 5, 2, 2}, {2, 6, 16, 3, 1, 0, 0},
	{3, 9, 8, 3, 3, 1, 1}, {2, 8, 6, 1, 3, 0, 2},
	// other widths (Inception-v3's 9×9 maps at 96 px, 1×7 and 7×1 on 4×4)
	{3, 9, 9, 3, 3, 1, 1}, {2, 9, 9, 5, 5, 2, 2}, {2, 4, 4, 1, 7, 0, 3}, {2, 4, 4, 7, 1, 3, 0},
	{2, 5, 5, 3, 3, 1, 1}, {2, 7, 12, 3, 3, 1, 1}, {2, 6, 15, 1, 1, 0, 0},
}

// paddedGeom returns the geometry of one sample of shape sh, failing
// the test unless im2col takes it through the padded plane.
func paddedGeom(t *testing.T, sh struct{ c, h, w, kh, kw, ph, pw int }) convGeom {
	t.Helper()
	p := tensor.Conv2DParams{StrideH: 1, StrideW: 1, PadH: sh.ph, PadW: sh.pw}
	oh, ow := p.OutSize(sh.h, sh.w, sh.kh, sh.kw)
	g := convGeom{n: 1, c: sh.c, h: sh.h, w: sh.w, o: 1, kh: sh.kh, kw: sh.kw, oh: oh, ow: ow, p: p}
	if !g.paddedRows() {
		t.Fatalf("%+v: not a padded-rows convolution", sh)
	}
	return g
}

// normals returns n standard normal values.
func normals(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	return v
}

// TestIm2colPadded checks im2colPadded against im2colRows bit for bit,
// over row ranges that start and end inside a channel.
func TestIm2colPadded(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, sh := range paddedShapes {
		name := fmt.Sprintf("%+v", sh)
		g := paddedGeom(t, sh)
		x := normals(rng, sh.c*sh.h*sh.w)
		k, pix := g.cols(), g.pixels()
		ld := pix + 3
		for _, r := range [][2]int{{0, k}, {1, k - 1}, {k / 2, k/2 + 1}} {
			got, want := make([]float32, k*ld), make([]float32, k*ld)
			for i := range got {
				got[i], want[i] = -7, -7 // what neither writes stays
			}
			g.im2colPadded(x, got, ld, r[0], r[1])
			g.im2colRows(x, want, ld, r[0], r[1])
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%s rows %v: col[%d] = %v, im2colRows %v", name, r, i, got[i], want[i])
				}
			}
		}
	}
}

// TestCol2imPadded checks col2imPadded against col2imChannels bit for
// bit, over channel ranges that start and end inside the sample.
func TestCol2imPadded(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, sh := range paddedShapes {
		name := fmt.Sprintf("%+v", sh)
		g := paddedGeom(t, sh)
		k, pix := g.cols(), g.pixels()
		ld := pix + 3
		dcol := normals(rng, k*ld)
		for _, r := range [][2]int{{0, sh.c}, {1, sh.c}, {0, 1}} {
			got, want := make([]float32, sh.c*sh.h*sh.w), make([]float32, sh.c*sh.h*sh.w)
			for i := range got {
				got[i], want[i] = -7, -7 // channels outside the range stay
			}
			g.col2imPadded(dcol, ld, got, r[0], r[1])
			g.col2imChannels(dcol, ld, want, r[0], r[1])
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%s channels %v: dx[%d] = %v, col2imChannels %v", name, r, i, got[i], want[i])
				}
			}
		}
	}
}

// BenchmarkIm2col times the lowering of resnet50's 3×3 convolutions at
// 64 px through the padded plane, against what it replaced: layer1's
// (64 channels, 16×16, 4 samples; row copies) and layer2's (128
// channels, 8×8, 8 samples; the tap table).
func BenchmarkIm2col(b *testing.B) {
	for _, tc := range []struct{ n, c, hw, k int }{{4, 64, 16, 3}, {8, 128, 8, 3}, {16, 256, 4, 3}, {8, 64, 9, 3}, {8, 48, 9, 5}, {16, 128, 2, 3}} {
		p := tensor.Conv2DParams{StrideH: 1, StrideW: 1, PadH: tc.k / 2, PadW: tc.k / 2}
		g := convGeom{n: tc.n, c: tc.c, h: tc.hw, w: tc.hw, o: tc.c, kh: tc.k, kw: tc.k, oh: tc.hw, ow: tc.hw, p: p}
		k, pix, in := g.cols(), g.pixels(), g.c*g.h*g.w
		x := make([]float32, g.n*in)
		col := make([]float32, k*g.n*pix)
		name := fmt.Sprintf("%dx%d/k%d", tc.hw, tc.hw, tc.k)
		b.Run(name+"/padded", func(b *testing.B) {
			for b.Loop() {
				g.im2col(x, col, g.n*pix, 0, g.n*k)
			}
		})
		b.Run(name+"/before", func(b *testing.B) {
			var taps [convTapsMax]int32
			tbl := g.tapTable(taps[:])
			for b.Loop() {
				for s := range g.n {
					if tbl != nil {
						g.im2colTaps(tbl, x[s*in:(s+1)*in], col[s*pix:], g.n*pix, 0, k)
					} else {
						g.im2colRows(x[s*in:(s+1)*in], col[s*pix:], g.n*pix, 0, k)
					}
				}
			}
		})
	}
}

// BenchmarkCol2im times the backward lowering (column gradient to input
// gradient) of 3×3 and 5×5 stride-1 convolutions: through the padded
// plane for rows of 4 to 16 values, by channel rows for Inception-v3's
// stem (45×45 and 20×20 at 96 px).
func BenchmarkCol2im(b *testing.B) {
	for _, tc := range []struct{ n, c, hw, k, pad int }{
		{4, 64, 16, 3, 1}, {8, 128, 8, 3, 1}, {16, 256, 4, 3, 1}, {8, 64, 9, 3, 1}, {8, 48, 9, 5, 2}, {2, 32, 47, 3, 0}, {4, 80, 22, 3, 0},
	} {
		p := tensor.Conv2DParams{StrideH: 1, StrideW: 1, PadH: tc.pad, PadW: tc.pad}
		o := tc.hw + 2*tc.pad - tc.k + 1
		g := convGeom{n: tc.n, c: tc.c, h: tc.hw, w: tc.hw, o: tc.c, kh: tc.k, kw: tc.k, oh: o, ow: o, p: p}
		k, pix, in := g.cols(), g.pixels(), g.c*g.h*g.w
		dx := make([]float32, g.n*in)
		dcol := make([]float32, k*g.n*pix)
		b.Run(fmt.Sprintf("%dx%d/k%d", tc.hw, tc.hw, tc.k), func(b *testing.B) {
			for b.Loop() {
				g.col2im(dcol, g.n*pix, dx, 0, g.n*g.c)
			}
		})
	}
}
