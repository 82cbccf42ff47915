package reference

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/pipecast/pipecast/tensor"
)

// Finite-difference checks of the backwards in this package's norm,
// activation and pooling tests: central differences with step
// bnGradStep have a truncation error of O(h²) ≈ 1e-8 (times the third
// derivative, of order one for these inputs) and a round-off error of
// O(ε·|f|/h) ≈ 1e-11, so 1e-6 relative with a 1e-7 floor is ample for
// functions that are smooth around the point.
const (
	bnGradStep = 1e-4
	bnGradRTol = 1e-6
	bnGradATol = 1e-7
)

func TestBatchNormTrainByHand(t *testing.T) {
	// One channel holding 1, 2 (sample 0) and 3, 4 (sample 1): mean 2.5,
	// biased variance 1.25, unbiased 5/3.
	p := tensor.BatchNormParams{Momentum: 0.25, Eps: 0.5}
	eps := float64(p.Eps)
	r := BatchNormTrain([]float64{1, 2, 3, 4}, 2, 1, 2, []float64{2}, []float64{-1}, []float64{4}, []float64{1}, p)
	inv := 1 / math.Sqrt(1.25+eps)
	closeTo(t, "mean", r.Mean, []float64{2.5}, 1e-15, 0)
	closeTo(t, "var", r.Var, []float64{1.25}, 1e-15, 0)
	closeTo(t, "invStd", r.InvStd, []float64{inv}, 1e-15, 0)
	closeTo(t, "y", r.Y, []float64{-1.5*inv*2 - 1, -0.5*inv*2 - 1, 0.5*inv*2 - 1, 1.5*inv*2 - 1}, 1e-15, 1e-15)
	closeTo(t, "runMean", r.RunMean, []float64{0.75*4 + 0.25*2.5}, 1e-15, 0)
	closeTo(t, "runVar", r.RunVar, []float64{0.75*1 + 0.25*5.0/3}, 1e-15, 0)

	if r := BatchNormTrain([]float64{1, 2, 3, 4}, 2, 1, 2, []float64{1}, []float64{0}, nil, nil, p); r.RunMean != nil || r.RunVar != nil {
		t.Errorf("without running stats: got %v and %v, want nil", r.RunMean, r.RunVar)
	}
}

func TestBatchNormTrainNormalises(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const n, c, hw = 3, 4, 5
	x := uniform(rng, n*c*hw, 99, 101) // a large offset must not matter
	gamma, beta := uniform(rng, c, 0.5, 2), uniform(rng, c, -1, 1)
	p := tensor.DefaultBatchNorm()
	r := BatchNormTrain(x, n, c, hw, gamma, beta, nil, nil, p)
	for ch := 0; ch < c; ch++ {
		var vals []float64
		for i := 0; i < n; i++ {
			vals = append(vals, r.Y[(i*c+ch)*hw:(i*c+ch+1)*hw]...)
		}
		mean, sq := 0.0, 0.0
		for _, v := range vals {
			mean += v / float64(len(vals))
		}
		for _, v := range vals {
			sq += (v - mean) * (v - mean) / float64(len(vals))
		}
		wantVar := gamma[ch] * gamma[ch] * r.Var[ch] / (r.Var[ch] + float64(p.Eps))
		if math.Abs(mean-beta[ch]) > 1e-12 || math.Abs(sq-wantVar) > 1e-12 {
			t.Errorf("channel %d: y has mean %v and variance %v, want %v and %v", ch, mean, sq, beta[ch], wantVar)
		}
	}
}

func TestBatchNormEvalByHand(t *testing.T) {
	// Two channels, [N, C] input with N = 2.
	p := tensor.BatchNormParams{Momentum: 0.1, Eps: 0.25}
	y := BatchNormEval([]float64{1, 2, 3, 4}, 2, 2, 1, []float64{2, 3}, []float64{1, -1}, []float64{1, 2}, []float64{0.75, 3.75}, p)
	// invStd is 1 for channel 0 and 0.5 for channel 1.
	want := []float64{(1-1)*2 + 1, (2-2)*0.5*3 - 1, (3-1)*2 + 1, (4-2)*0.5*3 - 1}
	closeTo(t, "y", y, want, 1e-15, 0)
}

func TestBatchNormBackwardMatchesFiniteDifferences(t *testing.T) {
	tests := []struct {
		name     string
		n, c, hw int
	}{
		{"batch 1 spatial 5", 1, 2, 5},
		{"[N,C] input", 4, 3, 1},
		{"batch 3 odd", 3, 3, 7},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(tc.n*100+tc.c*10+tc.hw), 7))
			x := uniform(rng, tc.n*tc.c*tc.hw, -1, 1)
			gamma, beta := uniform(rng, tc.c, 0.5, 1.5), uniform(rng, tc.c, -1, 1)
			r := uniform(rng, len(x), -1, 1)
			p := tensor.BatchNormParams{Momentum: 0.1, Eps: 1e-3}
			f := func([]float64) float64 {
				return dot(BatchNormTrain(x, tc.n, tc.c, tc.hw, gamma, beta, nil, nil, p).Y, r)
			}
			fwd := BatchNormTrain(x, tc.n, tc.c, tc.hw, gamma, beta, nil, nil, p)
			dx, dgamma, dbeta := BatchNormBackward(x, r, tc.n, tc.c, tc.hw, gamma, fwd.Mean, fwd.InvStd)
			closeTo(t, "dx", dx, numericGrad(f, x, bnGradStep), bnGradRTol, bnGradATol)
			closeTo(t, "dgamma", dgamma, numericGrad(f, gamma, bnGradStep), bnGradRTol, bnGradATol)
			closeTo(t, "dbeta", dbeta, numericGrad(f, beta, bnGradStep), bnGradRTol, bnGradATol)
		})
	}
}

func TestBatchNormTrainSingleValuePanics(t *testing.T) {
	defer func() {
		msg, _ := recover().(string)
		if !strings.Contains(msg, "more than 1 value per channel") {
			t.Errorf("got panic %q, want one about a single value per channel", msg)
		}
	}()
	BatchNormTrain([]float64{1, 2}, 1, 2, 1, []float64{1, 1}, []float64{0, 0}, nil, nil, tensor.DefaultBatchNorm())
}
