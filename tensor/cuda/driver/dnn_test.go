//go:build cuda

package driver

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pipecast/pipecast/tensor/cuda"
)

// convSlack scales the rounding bound of a convolution, (terms+2)·u·
// Σ|products| per element as for gemmSlack, to 16: cuDNN may choose
// Winograd or FFT algorithms (stride 1), whose transforms round beyond a
// plain dot product. TF32 still exceeds it on the probe of TestDNN by 7×
// or more: rounding both factors of every term from 1+2⁻¹² to 1 takes
// 2⁻¹¹ off each product, where the tolerance allows 16·(terms+2)·2⁻²⁴.
const convSlack = 16

// convShape completes a ConvShape with its output size.
func convShape(n, c, h, w, o, kh, kw, sh, sw, ph, pw int) cuda.ConvShape {
	return cuda.ConvShape{N: n, C: c, H: h, W: w, O: o, KH: kh, KW: kw, StrideH: sh, StrideW: sw, PadH: ph, PadW: pw,
		OH: (h+2*ph-kh)/sh + 1, OW: (w+2*pw-kw)/sw + 1}
}

// convRef holds the float64 references of the three convolutions and,
// per element, (terms+2)·u·Σ|products|.
type convRef struct {
	y, yBound, dx, dxBound, dw, dwBound []float64
}

// hostConv computes y = conv(x, w), dx from dy and the filters' gradient
// directly from the definition: y[n,o,i,j] = Σ_{c,p,q} x[n, c, i·sh−ph+p,
// j·sw−pw+q]·w[o,c,p,q], zero outside x.
func hostConv(s cuda.ConvShape, x, w, dy []float32) convRef {
	r := convRef{
		y: make([]float64, s.N*s.O*s.OH*s.OW), dx: make([]float64, len(x)), dw: make([]float64, len(w)),
	}
	r.yBound, r.dxBound, r.dwBound = make([]float64, len(r.y)), make([]float64, len(r.dx)), make([]float64, len(r.dw))
	yTerms, dxTerms, dwTerms := make([]int, len(r.y)), make([]int, len(r.dx)), make([]int, len(r.dw))
	for n := range s.N {
		for o := range s.O {
			for i := range s.OH {
				for j := range s.OW {
					yi := ((n*s.O+o)*s.OH+i)*s.OW + j
					for c := range s.C {
						for p := range s.KH {
							ih := i*s.StrideH - s.PadH + p
							if ih < 0 || ih >= s.H {
								continue
							}
							for q := range s.KW {
								iw := j*s.StrideW - s.PadW + q
								if iw < 0 || iw >= s.W {
									continue
								}
								xi := ((n*s.C+c)*s.H+ih)*s.W + iw
								wi := ((o*s.C+c)*s.KH+p)*s.KW + q
								xv, wv, dyv := float64(x[xi]), float64(w[wi]), float64(dy[yi])
								r.y[yi] += xv * wv
								r.yBound[yi] += math.Abs(xv * wv)
								yTerms[yi]++
								r.dx[xi] += dyv * wv
								r.dxBound[xi] += math.Abs(dyv * wv)
								dxTerms[xi]++
								r.dw[wi] += dyv * xv
								r.dwBound[wi] += math.Abs(dyv * xv)
								dwTerms[wi]++
							}
						}
					}
				}
			}
		}
	}
	scale := func(bound []float64, terms []int) {
		for i := range bound {
			bound[i] *= float64(terms[i]+2) * unitRoundoff
		}
	}
	scale(r.yBound, yTerms)
	scale(r.dxBound, dxTerms)
	scale(r.dwBound, dwTerms)
	return r
}

// withGuards returns n values v followed by tail guards, and a reference
// and bound extended to match (the guards must come back exact).
func withGuards(n int, v float32, tail int) []float32 {
	s := filled(n+tail, guard)
	for i := range n {
		s[i] = v
	}
	return s
}

func guarded(ref, bound []float64, tail int) ([]float64, []float64) {
	r := append(append([]float64(nil), ref...), make([]float64, tail)...)
	for i := len(ref); i < len(r); i++ {
		r[i] = float64(guard)
	}
	return r, append(append([]float64(nil), bound...), make([]float64, tail)...)
}

func TestDNN(t *testing.T) {
	d := open(t, 0)
	dnn := d.DNN()
	if dnn == nil {
		t.Skip(libraryNote("cudnn"))
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct {
		name  string
		s     cuda.ConvShape
		probe bool // x, w and dy all 1+2⁻¹², which TF32 rounds to 1
	}{
		{name: "3x3 stride 2 pad 1", s: convShape(2, 3, 7, 6, 4, 3, 3, 2, 2, 1, 1)},
		{name: "2x3 strides 2,1 pads 0,1", s: convShape(1, 5, 9, 8, 3, 2, 3, 2, 1, 0, 1)},
		{name: "1x1 stride 2", s: convShape(2, 3, 5, 5, 2, 1, 1, 2, 2, 0, 0)},
		{name: "5x5 stride 2 pad 2, batch 3", s: convShape(3, 2, 11, 10, 6, 5, 5, 2, 2, 2, 2)},
		{name: "3x3 stride 1 pad 1", s: convShape(3, 4, 6, 6, 5, 3, 3, 1, 1, 1, 1)},
		{name: "TF32 probe 3x3 stride 1", s: convShape(1, 8, 10, 10, 4, 3, 3, 1, 1, 0, 0), probe: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.s
			nx, nw, ny := s.N*s.C*s.H*s.W, s.O*s.C*s.KH*s.KW, s.N*s.O*s.OH*s.OW
			x, w, dy, dw0 := randoms(rng, nx), randoms(rng, nw), randoms(rng, ny), randoms(rng, nw)
			if tc.probe {
				x, w, dy = filled(nx, tf32Probe), filled(nw, tf32Probe), filled(ny, tf32Probe)
			}
			ref := hostConv(s, x, w, dy)
			for i := range ref.dw {
				ref.dw[i] += float64(dw0[i]) // backward filter accumulates
				ref.dwBound[i] += math.Abs(float64(dw0[i])) * 2 * unitRoundoff
			}
			const tail = 9
			px, pw, pdy := put(t, d, x), put(t, d, w), put(t, d, dy)
			// Outputs written with beta 0 start as NaN, which must not
			// survive; guards follow every output.
			py := put(t, d, withGuards(ny, float32(math.NaN()), tail))
			pdx := put(t, d, withGuards(nx, float32(math.NaN()), tail))
			pdw := put(t, d, append(append([]float32(nil), dw0...), filled(tail, guard)...))

			var spaces []cuda.Ptr
			ws := func(n int64) (cuda.Ptr, error) {
				p, err := d.Alloc(n)
				if err == nil {
					spaces = append(spaces, p)
				}
				return p, err
			}
			if err := dnn.ConvForward(s, px, pw, py, ws); err != nil {
				t.Fatalf("ConvForward: %v", err)
			}
			if err := dnn.ConvBackwardData(s, pdy, pw, pdx, ws); err != nil {
				t.Fatalf("ConvBackwardData: %v", err)
			}
			if err := dnn.ConvBackwardFilter(s, px, pdy, pdw, ws); err != nil {
				t.Fatalf("ConvBackwardFilter: %v", err)
			}
			if err := d.Sync(); err != nil {
				t.Fatalf("Sync after the convolutions: %v", err)
			}
			for _, p := range spaces {
				if err := d.Free(p); err != nil {
					t.Errorf("Free of a workspace: %v", err)
				}
			}
			if p := d.dnn.plans[s]; p != nil {
				t.Logf("%+v: algorithms forward %d (%d bytes), backward data %d (%d bytes), backward filter %d (%d bytes)", s,
					p.algos[forward].algo, p.algos[forward].bytes, p.algos[backwardData].algo, p.algos[backwardData].bytes,
					p.algos[backwardFilter].algo, p.algos[backwardFilter].bytes)
			}

			where := func(dims [4]int) func(int) string {
				return func(i int) string {
					if i >= dims[0]*dims[1]*dims[2]*dims[3] {
						return fmt.Sprintf("guard %d after the output", i-dims[0]*dims[1]*dims[2]*dims[3])
					}
					c := [4]int{}
					for k := 3; k >= 0; k-- {
						c[k], i = i%dims[k], i/dims[k]
					}
					return fmt.Sprintf("element %v of %v", c, dims)
				}
			}
			what := func(op string) string {
				if tc.probe {
					return fmt.Sprintf("%s %+v (on 1+2⁻¹²: short by about the term count × 2⁻¹¹ means TF32)", op, s)
				}
				return fmt.Sprintf("%s %+v", op, s)
			}
			want, bound := guarded(ref.y, ref.yBound, tail)
			closeFloats(t, what("ConvForward"), get(t, d, py, ny+tail), want, bound, convSlack, where([4]int{s.N, s.O, s.OH, s.OW}))
			want, bound = guarded(ref.dx, ref.dxBound, tail)
			closeFloats(t, what("ConvBackwardData"), get(t, d, pdx, nx+tail), want, bound, convSlack, where([4]int{s.N, s.C, s.H, s.W}))
			want, bound = guarded(ref.dw, ref.dwBound, tail)
			closeFloats(t, what("ConvBackwardFilter (accumulating)"), get(t, d, pdw, nw+tail), want, bound, convSlack, where([4]int{s.O, s.C, s.KH, s.KW}))
		})
	}
}

func TestDNNRejectsInconsistentShapes(t *testing.T) {
	d := open(t, 0)
	dnn := d.DNN()
	if dnn == nil {
		t.Skip(libraryNote("cudnn"))
	}
	s := convShape(1, 2, 8, 8, 3, 3, 3, 2, 2, 1, 1)
	s.OH++ // not what the padding and strides give
	noSpace := func(int64) (cuda.Ptr, error) { return 0, fmt.Errorf("no workspace in this test") }
	if err := dnn.ConvForward(s, 0, 0, 0, noSpace); err == nil {
		t.Errorf("ConvForward with OH %d for H 8, kernel 3, stride 2, pad 1: no error", s.OH)
	} else {
		t.Logf("as expected: %v", err)
	}
}
