package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/pipecast/pipecast/tensor"
	"github.com/pipecast/pipecast/tensor/reference"
)

// Tolerances of the attention kernels against the float64 references:
// every output is a float32 sum of at most max(S, hd) ≤ 197 products of
// values below a few units, whose error stays near √k·u ≈ 1e-6 relative
// (Higham, "Accuracy and Stability of Numerical Algorithms", §4.2), the
// softmax adding a few ulps; the absolute part covers sums that cancel
// (dscores' dprobs − ⟨dprobs, probs⟩ above all). The suite's
// reductionRTol and reductionATol, restated for this package.
const (
	attnRTol = 1e-4
	attnATol = 1e-5
)

// attnCases are sizes that exercise the tasks of attention_plan.go:
// sequences of one block and of several with a ragged last one, more
// tasks than threads and fewer, multi-head, grouped-query and
// multi-query heads.
var attnCases = []struct {
	name string
	b    int
	p    tensor.AttentionParams
}{
	{"one block GQA", 2, tensor.AttentionParams{Seq: 33, Heads: 4, KVHeads: 2, HeadDim: 16}},
	{"three blocks MQA", 1, tensor.AttentionParams{Seq: 2*attnRowBlock + 5, Heads: 2, KVHeads: 1, HeadDim: 64}},
	{"two blocks MHA", 2, tensor.AttentionParams{Seq: attnRowBlock + 1, Heads: 3, KVHeads: 3, HeadDim: 17}},
	{"block edge", 1, tensor.AttentionParams{Seq: attnRowBlock, Heads: 1, KVHeads: 1, HeadDim: 7}},
}

// TestAttentionKernels checks the four kernels against the references on
// 1 to 3 threads, with and without the causal mask, and that each holds
// exactly AttentionWorkspaceElems of scratch and releases it.
func TestAttentionKernels(t *testing.T) {
	for threads := 1; threads <= 3; threads++ {
		d := New(tensor.Options{Threads: threads})
		for _, tc := range attnCases {
			for _, causal := range []bool{false, true} {
				p := tc.p
				p.Causal = causal
				p.Scale = float32(1 / math.Sqrt(float64(p.HeadDim)))
				t.Run(fmt.Sprintf("threads=%d/%s/causal=%v", threads, tc.name, causal), func(t *testing.T) {
					attnCheckReference(t, d, tc.b, p, true)
				})
			}
		}
		d.Close()
	}
}

// TestAttentionOwnThreads checks the kernels on a device whose products
// bring their own threads: all products on the calling goroutine, none
// at the same time as another, and no scratch of the backend's.
func TestAttentionOwnThreads(t *testing.T) {
	var running, overlaps, calls atomic.Int32
	d := New(tensor.Options{Threads: 3})
	defer d.Close()
	d.extGemm = func(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
		calls.Add(1)
		if running.Add(1) > 1 {
			overlaps.Add(1)
		}
		defer running.Add(-1)
		gemmRegion(make([]float32, gemmPackElems(m, n, k)), transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
	}
	for _, tc := range attnCases[:2] {
		p := tc.p
		p.Causal, p.Scale = true, 0.25
		t.Run(tc.name, func(t *testing.T) { attnCheckReference(t, d, tc.b, p, false) })
	}
	if calls.Load() == 0 || overlaps.Load() > 0 {
		t.Errorf("%d products, %d of them while another ran; want some and none", calls.Load(), overlaps.Load())
	}
}

// attnCheckReference runs the forwards and backwards on d, chained as a
// layer runs them, each against its reference fed d's own float32
// inputs; with scratch, it checks each kernel's workspace peak against
// AttentionWorkspaceElems, else that none was held.
func attnCheckReference(t *testing.T, d *Device, b int, p tensor.AttentionParams, scratch bool) {
	t.Helper()
	rng := rand.New(rand.NewPCG(uint64(b*p.Seq*p.HeadDim), 3))
	rnd := func(n int) []float32 {
		s := make([]float32, n)
		for i := range s {
			s[i] = float32(2*rng.Float64() - 1)
		}
		return s
	}
	nq, nkv, np := b*p.Seq*p.Heads*p.HeadDim, b*p.Seq*p.KVHeads*p.HeadDim, b*p.Heads*p.Seq*p.Seq
	qs, ks, vs, douts := rnd(nq), rnd(nkv), rnd(nkv), rnd(nq)
	tensors := map[string]*tensor.Tensor{}
	for name, n := range map[string]int{"q": nq, "k": nkv, "v": nkv, "dout": nq, "out": nq, "dq": nq,
		"dk": nkv, "dv": nkv, "probs": np, "dprobs": np} {
		tensors[name] = d.Alloc(tensor.Activations, n)
		for i := range Data(tensors[name]) {
			Data(tensors[name])[i] = float32(math.NaN()) // an output must ignore what it held
		}
	}
	defer func() {
		for _, x := range tensors {
			x.Release()
		}
	}()
	copy(Data(tensors["q"]), qs)
	copy(Data(tensors["k"]), ks)
	copy(Data(tensors["v"]), vs)
	copy(Data(tensors["dout"]), douts)
	x := func(name string) *tensor.Tensor { return tensors[name] }
	want := int64(AttentionWorkspaceElems(p, b, d.pool.threads)) * tensor.BytesPerElement
	if !scratch {
		want = 0
	}
	run := func(name string, kernel func()) {
		t.Helper()
		d.ResetPeak()
		kernel()
		if got := d.Memory().PeakBytes[tensor.Workspace]; got != want {
			t.Errorf("%s: workspace peak %d bytes, want %d", name, got, want)
		}
		if live := d.Memory().LiveBytes[tensor.Workspace]; live != 0 {
			t.Errorf("%s: %d workspace bytes still held", name, live)
		}
	}
	run("scores", func() { d.AttentionScores(x("q"), x("k"), x("probs"), p) })
	probs := append([]float32(nil), Data(x("probs"))...)
	attnCompare(t, "probs", probs, reference.AttentionScores(wide(qs), wide(ks), b, p))
	run("context", func() { d.AttentionContext(x("probs"), x("v"), x("out"), p) })
	attnCompare(t, "out", Data(x("out")), reference.AttentionContext(wide(probs), wide(vs), b, p))
	run("context backward", func() { d.AttentionContextBackward(x("probs"), x("v"), x("dout"), x("dprobs"), x("dv"), p) })
	dprobs := append([]float32(nil), Data(x("dprobs"))...)
	wantDP, wantDV := reference.AttentionContextBackward(wide(probs), wide(vs), wide(douts), b, p)
	attnCompare(t, "dprobs", dprobs, wantDP)
	attnCompare(t, "dv", Data(x("dv")), wantDV)
	run("scores backward", func() {
		d.AttentionScoresBackward(x("q"), x("k"), x("probs"), x("dprobs"), x("dq"), x("dk"), p)
	})
	wantDQ, wantDK := reference.AttentionScoresBackward(wide(qs), wide(ks), wide(probs), wide(dprobs), b, p)
	attnCompare(t, "dq", Data(x("dq")), wantDQ)
	attnCompare(t, "dk", Data(x("dk")), wantDK)
	if p.Causal {
		for i, v := range probs {
			if row, col := i/p.Seq%p.Seq, i%p.Seq; col > row && (v != 0 || dprobs[i] != 0) {
				t.Fatalf("masked [%d, %d]: probs %v, dprobs %v, want 0", row, col, v, dprobs[i])
			}
		}
	}
}

// attnCompare fails the test unless got is within attnRTol and attnATol
// of want everywhere, and reports the worst element.
func attnCompare(t *testing.T, what string, got []float32, want []float64) {
	t.Helper()
	worst, at := 0.0, -1
	for i, w := range want {
		e := math.Abs(float64(got[i])-w) / (attnATol + attnRTol*math.Abs(w))
		if math.IsNaN(e) || e > worst {
			worst, at = math.Inf(1), i
			if !math.IsNaN(e) {
				worst = e
			}
		}
	}
	if worst > 1 {
		t.Errorf("%s[%d]: got %v, want %v (%.3g× the tolerance)", what, at, got[at], want[at], worst)
	}
}

// wide converts float32 data to float64 for a reference.
func wide(s []float32) []float64 {
	out := make([]float64, len(s))
	for i, v := range s {
		out[i] = float64(v)
	}
	return out
}
