package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pipecast/pipecast/tensor"
)

// poolSpecials are the values that make pooling's floating point
// delicate: zeros of both signs, infinities, and NaNs of both signs and
// two payloads (0xffc00000 is what x86 makes of ∞−∞).
var poolSpecials = []float32{
	0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)),
	math.Float32frombits(0x7fc00000), math.Float32frombits(0xffc00000), math.Float32frombits(0x7fc00123),
}

// poolTies are few distinct values, so that windows hold tied maxima.
var poolTies = []float32{
	float32(math.Inf(-1)), -2, -1, float32(math.Copysign(0, -1)), 0, 1, 2, float32(math.Inf(1)),
}

// poolKinds names the inputs the tests draw: normals; normals with one
// value in 8 special; after a ReLU (half +0), then with a positive NaN
// or +∞ in 16; few values, so that maxima tie, with a NaN in 64; zeros
// of both signs; −∞ everywhere but for a NaN in 32.
var poolKinds = []string{"normal", "special", "relu", "relu nan", "ties", "zeros", "-inf"}

// poolValues returns n values of the given kind.
func poolValues(rng *rand.Rand, kind string, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		switch kind {
		case "normal":
			v[i] = float32(rng.NormFloat64())
		case "special":
			v[i] = float32(rng.NormFloat64())
			if rng.IntN(8) == 0 {
				v[i] = poolSpecials[rng.IntN(len(poolSpecials))]
			}
		case "relu":
			v[i] = max(0, float32(rng.NormFloat64()))
		case "relu nan":
			v[i] = max(0, float32(rng.NormFloat64()))
			if rng.IntN(16) == 0 {
				v[i] = []float32{poolSpecials[2], poolSpecials[4], poolSpecials[6]}[rng.IntN(3)]
			}
		case "ties":
			v[i] = poolTies[rng.IntN(len(poolTies))]
			if rng.IntN(64) == 0 {
				v[i] = poolSpecials[4+rng.IntN(3)]
			}
		case "zeros":
			v[i] = poolSpecials[rng.IntN(2)]
		case "-inf":
			v[i] = float32(math.Inf(-1))
			if rng.IntN(32) == 0 {
				v[i] = poolSpecials[4+rng.IntN(3)]
			}
		default:
			panic("poolValues: unknown kind " + kind)
		}
	}
	return v
}

// poolMaps are the feature maps of the tests: the Inception blocks' 9×9
// and 4×4 at 96 px, the smallest, odd and non-square ones.
var poolMaps = [][2]int{{1, 1}, {2, 2}, {4, 4}, {9, 9}, {17, 17}, {3, 7}, {7, 3}, {1, 5}, {6, 1}}

// avgS1Windows are stride-1 average poolings: Inception's 3×3 pad 1,
// and other windows and paddings up to half the window.
var avgS1Windows = []tensor.Pool2DParams{
	{KH: 3, KW: 3, StrideH: 1, StrideW: 1, PadH: 1, PadW: 1},
	{KH: 3, KW: 3, StrideH: 1, StrideW: 1},
	{KH: 2, KW: 2, StrideH: 1, StrideW: 1, PadH: 1, PadW: 1},
	{KH: 5, KW: 5, StrideH: 1, StrideW: 1, PadH: 2, PadW: 2},
	{KH: 1, KW: 3, StrideH: 1, StrideW: 1, PadW: 1},
	{KH: 3, KW: 1, StrideH: 1, StrideW: 1, PadH: 1},
	{KH: 3, KW: 4, StrideH: 1, StrideW: 1, PadH: 1, PadW: 2},
	{KH: 1, KW: 1, StrideH: 1, StrideW: 1},
}

// poolGuard fills the ends of the buffers the plane kernels write into,
// to catch writes out of bounds.
const poolGuard = 12345.5

// guarded returns a buffer of n values between guards, and the n.
func guarded(n int) (buf, mid []float32) {
	buf = make([]float32, n+16)
	for i := range buf {
		buf[i] = poolGuard
	}
	return buf, buf[8 : 8+n]
}

// checkGuards fails t if a guard of buf moved.
func checkGuards(t *testing.T, name string, buf []float32) {
	t.Helper()
	n := len(buf) - 16
	for _, i := range []int{0, 1, 2, 3, 4, 5, 6, 7, n + 8, n + 9, n + 10, n + 11, n + 12, n + 13, n + 14, n + 15} {
		if buf[i] != poolGuard {
			t.Fatalf("%s: guard %d overwritten with %v", name, i, buf[i])
		}
	}
}

// sameBits fails t at the first element of got whose bits differ from
// want's, any NaN matching any NaN: which operand's payload a sum of two
// NaNs keeps is the compiler's choice of operand order (it differs under
// -race), and Go does not define it.
func sameBits(t *testing.T, name string, got, want []float32) {
	t.Helper()
	for i := range want {
		if got[i] != got[i] && want[i] != want[i] {
			continue
		}
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s: element %d is %v (%#08x), want %v (%#08x)", name, i,
				got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
		}
	}
}

func TestAvgPoolS1MatchesGeneric(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	for _, p := range avgS1Windows {
		// Rows wider than s1ZeroRow take the general stride-1 sums.
		for _, hw := range append(poolMaps, [2]int{3, len(s1ZeroRow) + 1}) {
			oh, ow := p.OutSize(hw[0], hw[1])
			if oh < 1 || ow < 1 {
				continue
			}
			g := poolGeom{planes: 1, h: hw[0], w: hw[1], oh: oh, ow: ow}
			rows, cols := g.spans(p)
			div := float32(p.KH * p.KW)
			for _, kind := range poolKinds {
				name := fmt.Sprintf("%dx%d pad %dx%d on %dx%d, %s", p.KH, p.KW, p.PadH, p.PadW, hw[0], hw[1], kind)
				x := poolValues(rng, kind, g.h*g.w)
				want := make([]float32, oh*ow)
				avgForwardPlane(want, x, g, rows, cols, div)
				buf, y := guarded(oh * ow)
				avgForwardS1(g, p).plane(y, x, div)
				checkGuards(t, name+": forward", buf)
				sameBits(t, name+": forward", y, want)

				dy := poolValues(rng, kind, oh*ow)
				want = make([]float32, g.h*g.w)
				avgBackwardPlane(want, dy, g, rows, cols, div)
				buf, dx := guarded(g.h * g.w)
				avgBackwardPlaneS1(dx, dy, make([]float32, oh*ow), g, p, div)
				checkGuards(t, name+": backward", buf)
				sameBits(t, name+": backward", dx, want)
			}
		}
	}
}

// TestAvgPoolS1Device runs the stride-1 average pooling through the
// device, on several planes and two threads, against the generic
// kernel plane by plane; the large plane takes the backward's heap
// buffer.
func TestAvgPoolS1Device(t *testing.T) {
	dev := New(tensor.Options{Threads: 2})
	defer dev.Close()
	rng := rand.New(rand.NewPCG(7, 11))
	p := avgS1Windows[0]
	for _, s := range [][4]int{{2, 3, 9, 9}, {16, 8, 4, 4}, {1, 2, 50, 47}, {3, 70, 1, 1}} {
		g := poolGeom{planes: s[0] * s[1], h: s[2], w: s[3], oh: s[2], ow: s[3]}
		rows, cols := g.spans(p)
		n := g.h * g.w
		x, y, dx := dev.Alloc(tensor.Activations, s[:]...), dev.Alloc(tensor.Activations, s[:]...), dev.Alloc(tensor.Activations, s[:]...)
		copy(Data(x), poolValues(rng, "special", g.planes*n))
		dev.AvgPool2DForward(x, y, p)
		dev.AvgPool2DBackward(x, dx, p) // x as dy: the same shape
		want := make([]float32, n)
		for pl := range g.planes {
			xp := Data(x)[pl*n : (pl+1)*n]
			name := fmt.Sprintf("%v: plane %d", s, pl)
			avgForwardPlane(want, xp, g, rows, cols, 9)
			sameBits(t, name+" forward", Data(y)[pl*n:(pl+1)*n], want)
			avgBackwardPlane(want, xp, g, rows, cols, 9)
			sameBits(t, name+" backward", Data(dx)[pl*n:(pl+1)*n], want)
		}
		x.Release()
		y.Release()
		dx.Release()
	}
}

// windowArgMaxRef is windowArgMax as it was first written, the loop of
// torch's CPU kernel: scanning rows then columns from −∞, it moves to a
// later element only if that one is strictly greater or NaN.
func windowArgMaxRef(x []float32, w, r0, r1, c0, c1 int) int {
	best, at := float32(math.Inf(-1)), r0*w+c0
	for r := r0; r < r1; r++ {
		for k, v := range x[r*w+c0 : r*w+c1] {
			if v > best || v != v {
				best, at = v, r*w+c0+k
			}
		}
	}
	return at
}

func TestMaxPoolWindowArgMaxMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 17))
	const h, w = 6, 7
	for _, kind := range poolKinds {
		for range 2000 {
			x := poolValues(rng, kind, h*w)
			r0, c0 := rng.IntN(h), rng.IntN(w)
			r1, c1 := r0+1+rng.IntN(h-r0), c0+1+rng.IntN(w-c0)
			want := windowArgMaxRef(x, w, r0, r1, c0, c1)
			if got := windowArgMax(x, w, r0, r1, c0, c1); got != want {
				t.Fatalf("%s: window rows [%d, %d) columns [%d, %d) of %v: got %d, want %d", kind, r0, r1, c0, c1, x, got, want)
			}
			if r0+3 > h || c0+3 > w {
				continue
			}
			want = windowArgMaxRef(x, w, r0, r0+3, c0, c0+3)
			if got := r0*w + c0 + argMax3x3(x[r0*w+c0:], w); got != want {
				t.Fatalf("%s: 3x3 window at (%d, %d) of %v: got %d, want %d", kind, r0, c0, x, got, want)
			}
		}
	}
}

// maxWindows are the max poolings of the tests: ResNet's stem, the
// Inception stem's and blocks', VGG's, and stride-1 and uneven ones.
var maxWindows = []tensor.Pool2DParams{
	{KH: 3, KW: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1},
	{KH: 3, KW: 3, StrideH: 2, StrideW: 2},
	{KH: 2, KW: 2, StrideH: 2, StrideW: 2},
	{KH: 3, KW: 3, StrideH: 1, StrideW: 1, PadH: 1, PadW: 1},
	{KH: 3, KW: 2, StrideH: 1, StrideW: 2, PadH: 1, PadW: 1},
}

// TestMaxPool2DBackwardMatchesReference compares the device's dx, on
// several planes and two threads, with one that windowArgMaxRef finds,
// bit for bit.
func TestMaxPool2DBackwardMatchesReference(t *testing.T) {
	dev := New(tensor.Options{Threads: 2})
	defer dev.Close()
	rng := rand.New(rand.NewPCG(19, 23))
	for _, p := range maxWindows {
		for _, hw := range append(poolMaps, [2]int{45, 45}) {
			oh, ow := p.OutSize(hw[0], hw[1])
			if oh < 1 || ow < 1 {
				continue
			}
			g := poolGeom{planes: 6, h: hw[0], w: hw[1], oh: oh, ow: ow}
			rows, cols := g.spans(p)
			in, out := g.h*g.w, oh*ow
			for _, kind := range poolKinds {
				name := fmt.Sprintf("%dx%d stride %dx%d pad %dx%d on %dx%d, %s",
					p.KH, p.KW, p.StrideH, p.StrideW, p.PadH, p.PadW, hw[0], hw[1], kind)
				x := dev.Alloc(tensor.Activations, 2, 3, g.h, g.w)
				dx := dev.Alloc(tensor.Activations, 2, 3, g.h, g.w)
				dy := dev.Alloc(tensor.Activations, 2, 3, oh, ow)
				copy(Data(x), poolValues(rng, kind, g.planes*in))
				copy(Data(dy), poolValues(rng, "special", g.planes*out))
				dev.MaxPool2DBackward(x, dy, dx, p)
				want := make([]float32, g.planes*in)
				for pl := range g.planes {
					xp, gp, wp := Data(x)[pl*in:(pl+1)*in], Data(dy)[pl*out:(pl+1)*out], want[pl*in:(pl+1)*in]
					for i, rb := range rows {
						for j, cb := range cols {
							wp[windowArgMaxRef(xp, g.w, rb.lo, rb.hi, cb.lo, cb.hi)] += gp[i*ow+j]
						}
					}
				}
				sameBits(t, name, Data(dx), want)
				x.Release()
				dx.Release()
				dy.Release()
			}
		}
	}
}
