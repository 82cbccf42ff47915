package reference

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pipecast/pipecast/tensor"
)

// attentionCases are the sizes the attention references are checked at:
// multi-head, grouped-query and multi-query heads, with and without the
// causal mask, odd lengths and widths.
var attentionCases = []struct {
	name string
	b    int
	p    tensor.AttentionParams
}{
	{"one position", 2, tensor.AttentionParams{Seq: 1, Heads: 2, KVHeads: 2, HeadDim: 3}},
	{"MHA", 1, tensor.AttentionParams{Seq: 5, Heads: 2, KVHeads: 2, HeadDim: 3}},
	{"GQA", 2, tensor.AttentionParams{Seq: 3, Heads: 4, KVHeads: 2, HeadDim: 5}},
	{"MQA", 1, tensor.AttentionParams{Seq: 4, Heads: 3, KVHeads: 1, HeadDim: 2}},
}

// TestAttentionGradients checks the two backward references, chained as
// a layer runs them, against central differences of ⟨out, r⟩ through
// both forwards with respect to q, k and v, and dprobs against those of
// ⟨AttentionContext(probs, v), r⟩ with respect to probs (0 at the masked
// positions, which the forward does not read).
func TestAttentionGradients(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 1))
	for _, tc := range attentionCases {
		for _, causal := range []bool{false, true} {
			p := tc.p
			p.Causal = causal
			p.Scale = float32(1 / math.Sqrt(float64(p.HeadDim)))
			t.Run(fmt.Sprintf("%s/causal=%v", tc.name, causal), func(t *testing.T) {
				qn, kvn := tc.b*p.Seq*p.Heads*p.HeadDim, tc.b*p.Seq*p.KVHeads*p.HeadDim
				q, k, v := uniform(rng, qn, -1, 1), uniform(rng, kvn, -1, 1), uniform(rng, kvn, -1, 1)
				r := uniform(rng, qn, -1, 1)
				loss := func(q, k, v []float64) float64 {
					return dot(AttentionContext(AttentionScores(q, k, tc.b, p), v, tc.b, p), r)
				}
				probs := AttentionScores(q, k, tc.b, p)
				dprobs, dv := AttentionContextBackward(probs, v, r, tc.b, p)
				dq, dk := AttentionScoresBackward(q, k, probs, dprobs, tc.b, p)
				closeTo(t, "dq", dq, numericGrad(func(x []float64) float64 { return loss(x, k, v) }, q, centralDiffStep),
					centralDiffRTol, centralDiffATol)
				closeTo(t, "dk", dk, numericGrad(func(x []float64) float64 { return loss(q, x, v) }, k, centralDiffStep),
					centralDiffRTol, centralDiffATol)
				closeTo(t, "dv", dv, numericGrad(func(x []float64) float64 { return loss(q, k, x) }, v, centralDiffStep),
					centralDiffRTol, centralDiffATol)
				wantDP := numericGrad(func(x []float64) float64 { return dot(AttentionContext(x, v, tc.b, p), r) },
					probs, centralDiffStep)
				closeTo(t, "dprobs", dprobs, wantDP, centralDiffRTol, centralDiffATol)
			})
		}
	}
}

// TestAttentionScoresRows checks that every row of probs is a
// distribution over the positions it sees, exactly 0 elsewhere, and that
// scores far beyond exp's range do not overflow.
func TestAttentionScoresRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(29, 1))
	for _, causal := range []bool{false, true} {
		p := tensor.AttentionParams{Seq: 6, Heads: 4, KVHeads: 2, HeadDim: 3, Scale: 1000, Causal: causal}
		q, k := uniform(rng, 6*4*3, -1, 1), uniform(rng, 6*2*3, -1, 1)
		probs := AttentionScores(q, k, 1, p)
		for row := range 4 * 6 {
			t0 := row % 6
			sum := 0.0
			for s, x := range probs[row*6 : (row+1)*6] {
				if math.IsNaN(x) || x < 0 || (causal && s > t0 && x != 0) {
					t.Fatalf("causal=%v: probs row %d: got %v", causal, row, probs[row*6:(row+1)*6])
				}
				sum += x
			}
			if math.Abs(sum-1) > 1e-12 {
				t.Errorf("causal=%v: probs row %d sums to %v, want 1", causal, row, sum)
			}
		}
	}
}

func ExampleAttentionScores() {
	// One sequence of two positions, one head of width 1: q = k = [0, 1].
	p := tensor.AttentionParams{Seq: 2, Heads: 1, KVHeads: 1, HeadDim: 1, Scale: 1, Causal: true}
	fmt.Printf("%.4f\n", AttentionScores([]float64{0, 1}, []float64{0, 1}, 1, p))
	// Output: [1.0000 0.0000 0.2689 0.7311]
}
