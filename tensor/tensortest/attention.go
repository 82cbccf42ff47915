package tensortest

import (
	"fmt"
	"math"
	"testing"

	"github.com/pipecast/pipecast/tensor"
	"github.com/pipecast/pipecast/tensor/reference"
)

// Tolerances of the attention kernels, in the form of tolerance.go.
const (
	// attentionRTol and attentionATol bound every attention output:
	// each is a float32 sum of at most max(S, hd) ≤ 131 products here
	// (scores over hd, context and the gradients over S), a softmax
	// whose exponentials and sums backends may take in float32, and
	// for dscores one subtraction that cancels; all of it stays within
	// the summation bound of reductionRTol and reductionATol.
	attentionRTol = reductionRTol
	attentionATol = reductionATol

	// attentionLargeRTol bounds the probabilities of scores of
	// magnitude L = 1000 (attentionLargeScore): a float32 score is
	// rounded about twice (the product, the scale) to within 2·L·u ≈
	// 1.2e-4 absolutely, and a probability's relative error is the
	// difference of two scores' errors, up to 2.4e-4; 5e-4 leaves a
	// factor two.
	attentionLargeRTol = 5e-4
	attentionLargeATol = reductionATol
)

// attentionLargeScore is the magnitude of the scores of the case that
// needs the softmax's maximum subtracted: e^1000 overflows float64 as
// well as float32.
const attentionLargeScore = 1000

// attentionCase is one attention test: b sequences of sizes p.
type attentionCase struct {
	name string
	b    int
	p    tensor.AttentionParams
}

// attentionCases returns multi-head, grouped-query and multi-query
// attention (4 query heads over 4, 2 and 1 key/value heads), with and
// without the causal mask, at odd sequence lengths and head widths, and
// a sequence long enough that a backend's blocks of positions split it.
func attentionCases() []attentionCase {
	var cases []attentionCase
	sizes := []struct{ b, s, hd int }{{2, 1, 3}, {1, 3, 5}, {3, 7, 8}, {2, 17, 11}, {1, 131, 40}}
	for _, kv := range []int{4, 2, 1} {
		for _, causal := range []bool{false, true} {
			for _, sz := range sizes {
				if sz.s > 100 && kv != 2 {
					continue // one head layout suffices for the long case
				}
				p := tensor.AttentionParams{Seq: sz.s, Heads: 4, KVHeads: kv, HeadDim: sz.hd,
					Scale: float32(1 / math.Sqrt(float64(sz.hd))), Causal: causal}
				cases = append(cases, attentionCase{fmt.Sprintf("B=%d/S=%d/H=4/Hkv=%d/hd=%d/causal=%v", sz.b, sz.s, kv, sz.hd, causal), sz.b, p})
			}
		}
	}
	return cases
}

// testAttention checks the four attention kernels of
// tensor.TransformerKernels along each route (capability.go): the
// device's kernels where it has the family, and always the host
// fallback.
func testAttention(t *testing.T, dev tensor.Device) {
	_, has := dev.(tensor.TransformerKernels)
	for _, r := range routes(dev, has) {
		for _, tc := range attentionCases() {
			t.Run(r.name+"/"+tc.name, func(t *testing.T) { testAttentionCase(t, r.dev, tc) })
		}
		for _, causal := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/large scores/causal=%v", r.name, causal), func(t *testing.T) {
				testAttentionLarge(t, r.dev, causal)
			})
		}
		t.Run(r.name+"/bad sizes", func(t *testing.T) { testAttentionPanics(t, r.dev) })
	}
}

// testAttentionCase runs the two forwards and the two backwards, chained
// as a layer runs them, each against its float64 reference fed the
// device's own float32 inputs; then the backwards again without the
// gradients that may be nil.
func testAttentionCase(t *testing.T, dev tensor.Device, tc attentionCase) {
	p, b := tc.p, tc.b
	rng := newRand(uint64(b*1000+p.Seq*10+p.KVHeads) + 41)
	qShape := tensor.Shape{b, p.Seq, p.Heads, p.HeadDim}
	kvShape := tensor.Shape{b, p.Seq, p.KVHeads, p.HeadDim}
	pShape := tensor.Shape{b, p.Heads, p.Seq, p.Seq}
	qs, ks, vs := randSlice(rng, qShape.Numel()), randSlice(rng, kvShape.Numel()), randSlice(rng, kvShape.Numel())
	q, k, v := upload(dev, tensor.Activations, qShape, qs), upload(dev, tensor.Activations, kvShape, ks), upload(dev, tensor.Activations, kvShape, vs)
	defer q.Release()
	defer k.Release()
	defer v.Release()

	probs := newGuarded(dev, tensor.Activations, pShape, nil)
	defer probs.release()
	tensor.AttentionScores(dev, q, k, probs.T, p)
	gotP := probs.check(t, "probs")
	compare(t, "probs", gotP, reference.AttentionScores(widen(qs), widen(ks), b, p), attentionRTol, attentionATol)
	checkMasked(t, "probs", gotP, p)

	out := newGuarded(dev, tensor.Activations, qShape, nil)
	defer out.release()
	tensor.AttentionContext(dev, probs.T, v, out.T, p)
	compare(t, "out", out.check(t, "out"), reference.AttentionContext(widen(gotP), widen(vs), b, p), attentionRTol, attentionATol)

	douts := randSlice(rng, qShape.Numel())
	dout := upload(dev, tensor.Gradients, qShape, douts)
	defer dout.Release()
	dprobs := newGuarded(dev, tensor.Gradients, pShape, nil)
	dv := newGuarded(dev, tensor.Gradients, kvShape, nil)
	defer dprobs.release()
	defer dv.release()
	tensor.AttentionContextBackward(dev, probs.T, v, dout, dprobs.T, dv.T, p)
	wantDP, wantDV := reference.AttentionContextBackward(widen(gotP), widen(vs), widen(douts), b, p)
	gotDP := dprobs.check(t, "dprobs")
	compare(t, "dprobs", gotDP, wantDP, attentionRTol, attentionATol)
	checkMasked(t, "dprobs", gotDP, p)
	compare(t, "dv", dv.check(t, "dv"), wantDV, attentionRTol, attentionATol)

	dq := newGuarded(dev, tensor.Gradients, qShape, nil)
	dk := newGuarded(dev, tensor.Gradients, kvShape, nil)
	defer dq.release()
	defer dk.release()
	tensor.AttentionScoresBackward(dev, q, k, probs.T, dprobs.T, dq.T, dk.T, p)
	dprobs.check(t, "dscores") // overwritten, within its bounds
	wantDQ, wantDK := reference.AttentionScoresBackward(widen(qs), widen(ks), widen(gotP), widen(gotDP), b, p)
	compare(t, "dq", dq.check(t, "dq"), wantDQ, attentionRTol, attentionATol)
	compare(t, "dk", dk.check(t, "dk"), wantDK, attentionRTol, attentionATol)
	sameBits(t, "probs after the backwards", tensor.ToHost(probs.T), gotP)

	// The gradients that may be nil, left out one at a time.
	dprobs2 := newGuarded(dev, tensor.Gradients, pShape, nil)
	defer dprobs2.release()
	tensor.AttentionContextBackward(dev, probs.T, v, dout, dprobs2.T, nil, p)
	compare(t, "dprobs without dv", dprobs2.check(t, "dprobs without dv"), wantDP, attentionRTol, attentionATol)
	for _, c := range []struct {
		name  string
		shape tensor.Shape
		want  []float64
	}{{"dq", qShape, wantDQ}, {"dk", kvShape, wantDK}} {
		dp := newGuarded(dev, tensor.Gradients, pShape, gotDP)
		g := newGuarded(dev, tensor.Gradients, c.shape, nil)
		if c.name == "dq" {
			tensor.AttentionScoresBackward(dev, q, k, probs.T, dp.T, g.T, nil, p)
		} else {
			tensor.AttentionScoresBackward(dev, q, k, probs.T, dp.T, nil, g.T, p)
		}
		dp.check(t, "dscores")
		compare(t, c.name+" alone", g.check(t, c.name+" alone"), c.want, attentionRTol, attentionATol)
		dp.release()
		g.release()
	}
}

// testAttentionLarge checks that scores of magnitude
// attentionLargeScore, whose exponentials overflow float32 and float64,
// give finite probabilities (the row's maximum subtracted first) and
// their context.
func testAttentionLarge(t *testing.T, dev tensor.Device, causal bool) {
	const b = 2
	p := tensor.AttentionParams{Seq: 9, Heads: 4, KVHeads: 2, HeadDim: 1, Scale: 1, Causal: causal}
	rng := newRand(43)
	qs := randSlice(rng, b*p.Seq*p.Heads)
	for i := range qs {
		qs[i] *= attentionLargeScore
	}
	ks, vs := randSlice(rng, b*p.Seq*p.KVHeads), randSlice(rng, b*p.Seq*p.KVHeads)
	q := upload(dev, tensor.Activations, tensor.Shape{b, p.Seq, p.Heads, 1}, qs)
	k := upload(dev, tensor.Activations, tensor.Shape{b, p.Seq, p.KVHeads, 1}, ks)
	v := upload(dev, tensor.Activations, tensor.Shape{b, p.Seq, p.KVHeads, 1}, vs)
	defer q.Release()
	defer k.Release()
	defer v.Release()
	probs := newGuarded(dev, tensor.Activations, tensor.Shape{b, p.Heads, p.Seq, p.Seq}, nil)
	out := newGuarded(dev, tensor.Activations, tensor.Shape{b, p.Seq, p.Heads, 1}, nil)
	defer probs.release()
	defer out.release()
	tensor.AttentionScores(dev, q, k, probs.T, p)
	tensor.AttentionContext(dev, probs.T, v, out.T, p)
	gotP := probs.check(t, "probs")
	compare(t, "probs", gotP, reference.AttentionScores(widen(qs), widen(ks), b, p), attentionLargeRTol, attentionLargeATol)
	checkMasked(t, "probs", gotP, p)
	compare(t, "out", out.check(t, "out"), reference.AttentionContext(widen(gotP), widen(vs), b, p), attentionRTol, attentionATol)
}

// checkMasked fails the test unless every entry of x [B, H, S, S] above
// the diagonal is exactly 0 under the causal mask.
func checkMasked(t *testing.T, what string, x []float32, p tensor.AttentionParams) {
	t.Helper()
	if !p.Causal {
		return
	}
	s := p.Seq
	for row := range len(x) / s {
		for u := row%s + 1; u < s; u++ {
			if v := x[row*s+u]; v != 0 {
				t.Fatalf("%s: masked entry [%d, %d] of matrix %d is %v, want 0", what, row%s, u, row/s, v)
			}
		}
	}
}

// testAttentionPanics checks that inconsistent sizes panic.
func testAttentionPanics(t *testing.T, dev tensor.Device) {
	p := tensor.AttentionParams{Seq: 3, Heads: 4, KVHeads: 2, HeadDim: 2, Scale: 1}
	q, k := dev.Alloc(tensor.Activations, 2, 3, 4, 2), dev.Alloc(tensor.Activations, 2, 3, 2, 2)
	probs, short := dev.Alloc(tensor.Activations, 2, 4, 3, 3), dev.Alloc(tensor.Activations, 1, 4, 3, 3)
	defer q.Release()
	defer k.Release()
	defer probs.Release()
	defer short.Release()
	three := p
	three.KVHeads = 3
	checkKernelPanics(t, "AttentionScores with 3 key heads for 4", func() { tensor.AttentionScores(dev, q, k, probs, three) })
	checkKernelPanics(t, "AttentionScores with probs of 1 sequence for 2", func() { tensor.AttentionScores(dev, q, k, short, p) })
	checkKernelPanics(t, "AttentionContext with v of q's shape", func() { tensor.AttentionContext(dev, probs, q, q, p) })
}
