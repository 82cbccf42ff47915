package tensortest

import (
	"fmt"
	"math"
	"testing"

	"github.com/pipecast/pipecast/tensor"
	"github.com/pipecast/pipecast/tensor/reference"
)

// The tests of tensor.TransformerKernels but attention: embedding,
// LayerNorm, RMSNorm, GELU, SwiGLU and RoPE (transformer_norm.go has the
// norms and RoPE). Each runs along two routes, as capability.go
// describes: "kernel", the device's own methods, called directly, where
// it has every method of transformerRows; and always "fallback",
// package tensor's functions on the device with its capabilities hidden,
// which run the host loops. Asking for transformerRows rather than the
// whole family lets a backend's row kernels be tested before its
// attention kernels exist.

// Tolerances of the transformer kernels, in the form of tolerance.go's.
// The norms are reductions over a row (and their parameter gradients over
// the rows) and use reductionRTol and reductionATol; the embedding's
// backward sums a repeated token's rows, a reduction too.
const (
	// activationRTol and activationATol bound GELU and SwiGLU and their
	// derivatives. A backend whose tanh or exp is float32 (a couple of
	// ulps, as CUDA's tanhf and expf) keeps its relative accuracy except
	// where 1 + tanh or the sigmoid cancels towards 0, which leaves an
	// absolute error of about |x|·2⁻²³ ≈ 7e-7 for the tests' |x| < 6;
	// the derivatives add a few terms of order one, each rounded.
	// 16 ulps relative and 2e-6 absolute leave room for both and still
	// catch GELU's erf form, 4.7e-4 away from the tanh form near |x| =
	// 2.7.
	activationRTol = 1e-6
	activationATol = 2e-6

	// ropeRTol and ropeATol bound RoPE: each output is two products and
	// a sum of values below 1, a few ulps (2⁻²⁴ ≈ 6e-8) with sines and
	// cosines accurate to float32. An angle s·θ^(−2i/hd) rounded to
	// float32 is off by up to half an ulp of it: 2⁻¹² ≈ 2.4e-4 radians
	// at 2898, the largest of the long-sequence case, and still 2e-6 at
	// 41. The contract's angles are exact, and 1e-6 catches a kernel
	// whose angles are not.
	ropeRTol = 1e-6
	ropeATol = 1e-6
)

// transformerRows is the part of tensor.TransformerKernels these tests
// cover.
type transformerRows interface {
	EmbeddingForward(ids, table, y *tensor.Tensor)
	EmbeddingBackward(ids, dy, dtable *tensor.Tensor)
	LayerNormForward(x, gamma, beta, y, mean, rstd *tensor.Tensor, eps float32)
	LayerNormBackward(x, dy, gamma, mean, rstd, dx, dgamma, dbeta *tensor.Tensor)
	RMSNormForward(x, gamma, y, rstd *tensor.Tensor, eps float32)
	RMSNormBackward(x, dy, gamma, rstd, dx, dgamma *tensor.Tensor)
	GELUTanhForward(x, y *tensor.Tensor)
	GELUTanhBackward(x, dy, dx *tensor.Tensor)
	SwiGLUForward(gate, up, y *tensor.Tensor)
	SwiGLUBackward(gate, up, dy, dgate, dup *tensor.Tensor)
	RoPE(x, y *tensor.Tensor, p tensor.RoPEParams)
}

// rowsRoute is one way to the kernels of transformerRows: k runs them on
// dev, where the test allocates.
type rowsRoute struct {
	name string
	dev  tensor.Device
	k    transformerRows
}

// rowsRoutes returns the routes of the transformerRows kernels on dev.
func rowsRoutes(dev tensor.Device) []rowsRoute {
	var rs []rowsRoute
	if k, ok := dev.(transformerRows); ok {
		rs = append(rs, rowsRoute{"kernel", dev, k})
	}
	b := bare{dev}
	return append(rs, rowsRoute{"fallback", b, hostRows{b}})
}

// hostRows runs package tensor's functions on dev: the host fallback
// when dev is bare.
type hostRows struct{ dev tensor.Device }

func (h hostRows) EmbeddingForward(ids, table, y *tensor.Tensor) {
	tensor.EmbeddingForward(h.dev, ids, table, y)
}
func (h hostRows) EmbeddingBackward(ids, dy, dtable *tensor.Tensor) {
	tensor.EmbeddingBackward(h.dev, ids, dy, dtable)
}
func (h hostRows) LayerNormForward(x, gamma, beta, y, mean, rstd *tensor.Tensor, eps float32) {
	tensor.LayerNormForward(h.dev, x, gamma, beta, y, mean, rstd, eps)
}
func (h hostRows) LayerNormBackward(x, dy, gamma, mean, rstd, dx, dgamma, dbeta *tensor.Tensor) {
	tensor.LayerNormBackward(h.dev, x, dy, gamma, mean, rstd, dx, dgamma, dbeta)
}
func (h hostRows) RMSNormForward(x, gamma, y, rstd *tensor.Tensor, eps float32) {
	tensor.RMSNormForward(h.dev, x, gamma, y, rstd, eps)
}
func (h hostRows) RMSNormBackward(x, dy, gamma, rstd, dx, dgamma *tensor.Tensor) {
	tensor.RMSNormBackward(h.dev, x, dy, gamma, rstd, dx, dgamma)
}
func (h hostRows) GELUTanhForward(x, y *tensor.Tensor) { tensor.GELUTanhForward(h.dev, x, y) }
func (h hostRows) GELUTanhBackward(x, dy, dx *tensor.Tensor) {
	tensor.GELUTanhBackward(h.dev, x, dy, dx)
}
func (h hostRows) SwiGLUForward(gate, up, y *tensor.Tensor) { tensor.SwiGLUForward(h.dev, gate, up, y) }
func (h hostRows) SwiGLUBackward(gate, up, dy, dgate, dup *tensor.Tensor) {
	tensor.SwiGLUBackward(h.dev, gate, up, dy, dgate, dup)
}
func (h hostRows) RoPE(x, y *tensor.Tensor, p tensor.RoPEParams) { tensor.RoPE(h.dev, x, y, p) }

// testEmbedding checks EmbeddingForward (exactly: it copies) and
// EmbeddingBackward, whose rows of a repeated token must sum, into a
// gradient that already holds values.
func testEmbedding(t *testing.T, dev tensor.Device) {
	tests := []struct {
		name  string
		vocab int
		ids   []int // nil: n random ids
		n     int
		shape tensor.Shape // of ids; nil: [n]
	}{
		{"one token of width 1", 1, []int{0}, 1, nil},
		{"repeated tokens", 5, []int{4, 0, 4, 4, 2, 0, 1}, 7, nil},
		{"ids [3, 5]", 17, nil, 15, tensor.Shape{3, 5}},
		{"vocabulary of 1", 1, []int{0, 0, 0}, 3, nil},
		{"split across threads", 50, nil, 211, nil},
	}
	widths := []int{1, 3, 17, 301}
	for _, r := range rowsRoutes(dev) {
		for _, tc := range tests {
			for _, d := range widths {
				t.Run(fmt.Sprintf("%s/%s/d=%d", r.name, tc.name, d), func(t *testing.T) {
					testEmbeddingCase(t, r, tc.vocab, d, tc.ids, tc.n, tc.shape)
				})
			}
		}
		t.Run(r.name+"/bad ids panic", func(t *testing.T) { testEmbeddingBadIDs(t, r) })
	}
}

func testEmbeddingCase(t *testing.T, r rowsRoute, vocab, d int, ids []int, n int, shape tensor.Shape) {
	rng := newRand(uint64(vocab*1000 + d*10 + n))
	if ids == nil {
		ids = make([]int, n)
		for i := range ids {
			ids[i] = rng.IntN(vocab)
		}
	}
	if shape == nil {
		shape = tensor.Shape{n}
	}
	idVals := make([]float32, n)
	for i, id := range ids {
		idVals[i] = float32(id)
	}
	tableVals := randSlice(rng, vocab*d)
	idT := upload(r.dev, tensor.Activations, shape, idVals)
	table := upload(r.dev, tensor.Weights, tensor.Shape{vocab, d}, tableVals)
	defer idT.Release()
	defer table.Release()

	yShape := append(append(tensor.Shape{}, shape...), d)
	y := newGuarded(r.dev, tensor.Activations, yShape, nil)
	defer y.release()
	r.k.EmbeddingForward(idT, table, y.T)
	compare(t, "y", y.check(t, "y"), reference.Embedding(ids, widen(tableVals), d), 0, 0)

	dys, dt0 := randSlice(rng, n*d), randSlice(rng, vocab*d)
	dy := upload(r.dev, tensor.Activations, yShape, dys)
	defer dy.Release()
	dtable := newGuarded(r.dev, tensor.Gradients, tensor.Shape{vocab, d}, dt0)
	defer dtable.release()
	r.k.EmbeddingBackward(idT, dy, dtable.T)
	want := reference.EmbeddingBackward(ids, widen(dys), vocab, d)
	for i := range want {
		want[i] += float64(dt0[i])
	}
	compare(t, "dtable", dtable.check(t, "dtable"), want, reductionRTol, reductionATol)
}

// testEmbeddingBadIDs checks that ids outside the vocabulary, or not
// whole numbers, panic in both directions.
func testEmbeddingBadIDs(t *testing.T, r rowsRoute) {
	table := r.dev.Alloc(tensor.Weights, 4, 3)
	rows := r.dev.Alloc(tensor.Activations, 2, 3)
	defer table.Release()
	defer rows.Release()
	for _, bad := range []float32{-1, 4, 1.5, float32(math.NaN())} {
		ids := upload(r.dev, tensor.Activations, tensor.Shape{2}, []float32{0, bad})
		checkKernelPanics(t, fmt.Sprintf("EmbeddingForward with id %v of 4", bad), func() { r.k.EmbeddingForward(ids, table, rows) })
		checkKernelPanics(t, fmt.Sprintf("EmbeddingBackward with id %v of 4", bad), func() { r.k.EmbeddingBackward(ids, rows, table) })
		ids.Release()
	}
	ids := r.dev.Alloc(tensor.Activations, 3)
	defer ids.Release()
	checkKernelPanics(t, "EmbeddingForward with 3 ids for 2 rows", func() { r.k.EmbeddingForward(ids, table, rows) })
}

// activationSizes are the lengths the activations are tested at: odd
// ones, and one that a device shares out over its threads.
var activationSizes = []int{1, 2, 3, 5, 17, 1001, 3<<12 + 7}

// activationInputs returns n values uniform in [−6, 6), with 0, −0, and
// values far in both tails (where tanh and the sigmoid saturate) at the
// start when n allows.
func activationInputs(seed uint64, n int) []float32 {
	xs := randSlice(newRand(seed), n)
	for i := range xs {
		xs[i] *= 6
	}
	special := []float32{0, float32(math.Copysign(0, -1)), 30, -30, 100, -100}
	copy(xs, special[:min(len(special), n)])
	return xs
}

// testGELUTanh checks GELUTanhForward and GELUTanhBackward against the
// float64 reference.
func testGELUTanh(t *testing.T, dev tensor.Device) {
	for _, r := range rowsRoutes(dev) {
		for _, n := range activationSizes {
			t.Run(fmt.Sprintf("%s/n=%d", r.name, n), func(t *testing.T) {
				xs, dys := activationInputs(uint64(n), n), randSlice(newRand(uint64(n)+1), n)
				x := upload(r.dev, tensor.Activations, tensor.Shape{n}, xs)
				dy := upload(r.dev, tensor.Activations, tensor.Shape{n}, dys)
				y := newGuarded(r.dev, tensor.Activations, tensor.Shape{n}, nil)
				dx := newGuarded(r.dev, tensor.Activations, tensor.Shape{n}, nil)
				defer x.Release()
				defer dy.Release()
				defer y.release()
				defer dx.release()
				r.k.GELUTanhForward(x, y.T)
				compare(t, "y", y.check(t, "y"), reference.GELUTanh(widen(xs)), activationRTol, activationATol)
				r.k.GELUTanhBackward(x, dy, dx.T)
				compare(t, "dx", dx.check(t, "dx"), reference.GELUTanhBackward(widen(xs), widen(dys)), activationRTol, activationATol)
			})
		}
	}
}

// testSwiGLU checks SwiGLUForward and SwiGLUBackward against the float64
// reference, the backward also with either gradient not wanted.
func testSwiGLU(t *testing.T, dev tensor.Device) {
	for _, r := range rowsRoutes(dev) {
		for _, n := range activationSizes {
			t.Run(fmt.Sprintf("%s/n=%d", r.name, n), func(t *testing.T) {
				gs, us, dys := activationInputs(uint64(n)+2, n), randSlice(newRand(uint64(n)+3), n), randSlice(newRand(uint64(n)+4), n)
				s := tensor.Shape{n}
				gate, up := upload(r.dev, tensor.Activations, s, gs), upload(r.dev, tensor.Activations, s, us)
				dy := upload(r.dev, tensor.Activations, s, dys)
				y := newGuarded(r.dev, tensor.Activations, s, nil)
				defer gate.Release()
				defer up.Release()
				defer dy.Release()
				defer y.release()
				r.k.SwiGLUForward(gate, up, y.T)
				compare(t, "y", y.check(t, "y"), reference.SwiGLU(widen(gs), widen(us)), activationRTol, activationATol)

				wantG, wantU := reference.SwiGLUBackward(widen(gs), widen(us), widen(dys))
				for _, want := range []struct{ gate, up bool }{{true, true}, {true, false}, {false, true}} {
					dgate := newGuarded(r.dev, tensor.Activations, s, nil)
					dup := newGuarded(r.dev, tensor.Activations, s, nil)
					dgT, duT := dgate.T, dup.T
					if !want.gate {
						dgT = nil
					}
					if !want.up {
						duT = nil
					}
					r.k.SwiGLUBackward(gate, up, dy, dgT, duT)
					// An output not asked for keeps its guard values.
					if want.gate {
						compare(t, "dgate", dgate.check(t, "dgate"), wantG, activationRTol, activationATol)
					} else {
						compare(t, "dgate not asked for", dgate.check(t, "dgate"), guardValues(n), 0, 0)
					}
					if want.up {
						compare(t, "dup", dup.check(t, "dup"), wantU, activationRTol, activationATol)
					} else {
						compare(t, "dup not asked for", dup.check(t, "dup"), guardValues(n), 0, 0)
					}
					dgate.release()
					dup.release()
				}
			})
		}
	}
}

// guardValues returns n copies of guardValue, what an output that a
// kernel must not write holds.
func guardValues(n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = float64(guardValue)
	}
	return out
}
