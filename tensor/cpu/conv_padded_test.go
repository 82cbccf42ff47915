package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pipecast/pipecast/tensor"
)

// paddedShapes are stride-1 convolutions with output rows of 4, 8 and
// 16 values: 3×3 and 5×5 kernels, with and without padding, square and
// not.
var paddedShapes = []struct{ c, h, w, kh, kw, ph, pw int }{
	{3, 8, 8, 3, 3, 1, 1}, {5, 4, 4, 3, 3, 1, 1}, {2, 16, 16, 3, 3, 1, 1},
	{4, 10, 10, 3, 3, 0, 0}, {3, 8, 8, 5, 5, 2, 2}, {2, 6, 16, 3, 1, 0, 0},
	{3, 9, 8, 3, 3, 1, 1}, {2, 8, 6, 1, 3, 0, 2},
}

// TestIm2colPadded checks im2colPadded against im2colRows bit for bit,
// over row ranges that start and end inside a channel.
func TestIm2colPadded(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, sh := range paddedShapes {
		name := fmt.Sprintf("%+v", sh)
		p := tensor.Conv2DParams{StrideH: 1, StrideW: 1, PadH: sh.ph, PadW: sh.pw}
		oh, ow := p.OutSize(sh.h, sh.w, sh.kh, sh.kw)
		g := convGeom{n: 1, c: sh.c, h: sh.h, w: sh.w, o: 1, kh: sh.kh, kw: sh.kw, oh: oh, ow: ow, p: p}
		if !g.paddedRows() {
			t.Fatalf("%s: not a padded-rows convolution", name)
		}
		x := make([]float32, sh.c*sh.h*sh.w)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
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
		p := tensor.Conv2DParams{StrideH: 1, StrideW: 1, PadH: sh.ph, PadW: sh.pw}
		oh, ow := p.OutSize(sh.h, sh.w, sh.kh, sh.kw)
		g := convGeom{n: 1, c: sh.c, h: sh.h, w: sh.w, o: 1, kh: sh.kh, kw: sh.kw, oh: oh, ow: ow, p: p}
		k, pix := g.cols(), g.pixels()
		ld := pix + 3
		dcol := make([]float32, k*ld)
		for i := range dcol {
			dcol[i] = float32(rng.NormFloat64())
		}
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

// BenchmarkIm2col times the lowering of resnet50's 8×8 3×3 convolution
// (layer2 at 64 px) for 8 samples, through the padded plane and through
// the tap table it replaces.
func BenchmarkIm2col(b *testing.B) {
	p := tensor.Conv2DParams{StrideH: 1, StrideW: 1, PadH: 1, PadW: 1}
	g := convGeom{n: 8, c: 128, h: 8, w: 8, o: 128, kh: 3, kw: 3, oh: 8, ow: 8, p: p}
	x := make([]float32, g.n*g.c*g.h*g.w)
	k, pix := g.cols(), g.pixels()
	col := make([]float32, k*g.n*pix)
	b.Run("padded", func(b *testing.B) {
		for b.Loop() {
			g.im2col(x, col, g.n*pix, 0, g.n*k)
		}
	})
	b.Run("taps", func(b *testing.B) {
		var taps [convTapsMax]int32
		tbl := g.tapTable(taps[:])
		for b.Loop() {
			for s := range g.n {
				g.im2colTaps(tbl, x[s*g.c*64:(s+1)*g.c*64], col[s*pix:], g.n*pix, 0, k)
			}
		}
	})
}

// BenchmarkIm2col16 is BenchmarkIm2col for resnet50's 16×16 3×3
// convolution (layer1 at 64 px), against the row copies it replaces.
func BenchmarkIm2col16(b *testing.B) {
	p := tensor.Conv2DParams{StrideH: 1, StrideW: 1, PadH: 1, PadW: 1}
	g := convGeom{n: 4, c: 64, h: 16, w: 16, o: 64, kh: 3, kw: 3, oh: 16, ow: 16, p: p}
	x := make([]float32, g.n*g.c*g.h*g.w)
	k, pix := g.cols(), g.pixels()
	col := make([]float32, k*g.n*pix)
	b.Run("padded", func(b *testing.B) {
		for b.Loop() {
			g.im2col(x, col, g.n*pix, 0, g.n*k)
		}
	})
	b.Run("rows", func(b *testing.B) {
		for b.Loop() {
			for s := range g.n {
				g.im2colRows(x[s*g.c*256:(s+1)*g.c*256], col[s*pix:], g.n*pix, 0, k)
			}
		}
	})
}
