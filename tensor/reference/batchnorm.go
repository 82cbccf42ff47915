package reference

import (
	"fmt"
	"math"

	"github.com/pipecast/pipecast/tensor"
)

// BatchNormTrainResult is what a training-mode batch norm computes: the
// output and, per channel, the statistics of the batch and the updated
// running statistics.
type BatchNormTrainResult struct {
	// Y is the normalised output, shaped like the input.
	Y []float64
	// Mean and Var are the batch mean and the biased (population)
	// variance of each channel, the statistics Y is normalised with.
	Mean, Var []float64
	// InvStd is 1/sqrt(Var + Eps), what a backend saves for the backward.
	InvStd []float64
	// RunMean and RunVar are the updated running statistics, new slices
	// (the arguments are left unchanged); nil when none were given.
	RunMean, RunVar []float64
}

// BatchNormTrain is torch's batch_norm in training mode on x [n, c, hw]
// (an [N, C, H, W] tensor with hw = H·W, or [N, C] with hw = 1):
//
//	mean_c = Σ x / m,  var_c = Σ (x − mean_c)² / m,  m = n·hw
//	y = (x − mean_c) / sqrt(var_c + Eps) · gamma_c + beta_c
//	run = (1 − Momentum)·run + Momentum·stat,  with var_c·m/(m − 1)
//
// The running statistics are updated only when runMean and runVar are
// given (both or neither). It panics when m is 1, as torch raises "Expected more than 1 value
// per channel when training": the unbiased variance would divide by zero.
func BatchNormTrain(x []float64, n, c, hw int, gamma, beta, runMean, runVar []float64, p tensor.BatchNormParams) BatchNormTrainResult {
	bnCheck("batchnorm train", x, n, c, hw, gamma, beta)
	m := n * hw
	if m <= 1 {
		panic(fmt.Sprintf("reference: batchnorm train: expected more than 1 value per channel when training, got %d", m))
	}
	eps, mom := float64(p.Eps), float64(p.Momentum)
	r := BatchNormTrainResult{
		Y:      make([]float64, len(x)),
		Mean:   make([]float64, c),
		Var:    make([]float64, c),
		InvStd: make([]float64, c),
	}
	for ch := 0; ch < c; ch++ {
		sum := 0.0
		for i := 0; i < n; i++ {
			for _, v := range x[(i*c+ch)*hw : (i*c+ch+1)*hw] {
				sum += v
			}
		}
		mean := sum / float64(m)
		sq := 0.0
		for i := 0; i < n; i++ {
			for _, v := range x[(i*c+ch)*hw : (i*c+ch+1)*hw] {
				sq += (v - mean) * (v - mean)
			}
		}
		r.Mean[ch], r.Var[ch] = mean, sq/float64(m)
		r.InvStd[ch] = 1 / math.Sqrt(r.Var[ch]+eps)
		for i := 0; i < n; i++ {
			at := (i*c + ch) * hw
			for k := at; k < at+hw; k++ {
				r.Y[k] = (x[k]-mean)*r.InvStd[ch]*gamma[ch] + beta[ch]
			}
		}
	}
	if runMean != nil || runVar != nil {
		if len(runMean) != c || len(runVar) != c {
			panic(fmt.Sprintf("reference: batchnorm train: running stats of %d and %d values for %d channels", len(runMean), len(runVar), c))
		}
		r.RunMean, r.RunVar = make([]float64, c), make([]float64, c)
		for ch := 0; ch < c; ch++ {
			unbiased := r.Var[ch] * float64(m) / float64(m-1)
			r.RunMean[ch] = (1-mom)*runMean[ch] + mom*r.Mean[ch]
			r.RunVar[ch] = (1-mom)*runVar[ch] + mom*unbiased
		}
	}
	return r
}

// BatchNormEval is torch's batch_norm in evaluation mode: x [n, c, hw] is
// normalised with the running statistics,
//
//	y = (x − runMean_c) / sqrt(runVar_c + Eps) · gamma_c + beta_c.
func BatchNormEval(x []float64, n, c, hw int, gamma, beta, runMean, runVar []float64, p tensor.BatchNormParams) []float64 {
	bnCheck("batchnorm eval", x, n, c, hw, gamma, beta)
	if len(runMean) != c || len(runVar) != c {
		panic(fmt.Sprintf("reference: batchnorm eval: running stats of %d and %d values for %d channels", len(runMean), len(runVar), c))
	}
	y := make([]float64, len(x))
	for i := 0; i < n; i++ {
		for ch := 0; ch < c; ch++ {
			inv := 1 / math.Sqrt(runVar[ch]+float64(p.Eps))
			at := (i*c + ch) * hw
			for k := at; k < at+hw; k++ {
				y[k] = (x[k]-runMean[ch])*inv*gamma[ch] + beta[ch]
			}
		}
	}
	return y
}

// BatchNormBackward returns the gradients of a training-mode batch norm
// on x [n, c, hw] given the output gradient dy and the mean and invStd
// the forward normalised with (x̂ = (x − mean)·invStd, m = n·hw):
//
//	dx     = invStd·gamma/m · (m·dy − Σ dy − x̂·Σ dy·x̂)
//	dgamma = Σ dy·x̂,  dbeta = Σ dy
//
// the sums running over each channel's m values. dx includes the paths
// through the batch statistics. dgamma and dbeta are this call's
// contribution alone; a backend accumulates them into its gradients.
func BatchNormBackward(x, dy []float64, n, c, hw int, gamma, mean, invStd []float64) (dx, dgamma, dbeta []float64) {
	bnCheck("batchnorm backward", x, n, c, hw, gamma, mean)
	if len(dy) != len(x) || len(invStd) != c {
		panic(fmt.Sprintf("reference: batchnorm backward: dy of %d values, invStd of %d, for x of %d and %d channels", len(dy), len(invStd), len(x), c))
	}
	m := float64(n * hw)
	dx, dgamma, dbeta = make([]float64, len(x)), make([]float64, c), make([]float64, c)
	for ch := 0; ch < c; ch++ {
		for i := 0; i < n; i++ {
			at := (i*c + ch) * hw
			for k := at; k < at+hw; k++ {
				dbeta[ch] += dy[k]
				dgamma[ch] += dy[k] * (x[k] - mean[ch]) * invStd[ch]
			}
		}
		for i := 0; i < n; i++ {
			at := (i*c + ch) * hw
			for k := at; k < at+hw; k++ {
				xhat := (x[k] - mean[ch]) * invStd[ch]
				dx[k] = invStd[ch] * gamma[ch] / m * (m*dy[k] - dbeta[ch] - xhat*dgamma[ch])
			}
		}
	}
	return dx, dgamma, dbeta
}

func bnCheck(op string, x []float64, n, c, hw int, gamma, perChannel []float64) {
	if n < 1 || c < 1 || hw < 1 || len(x) != n*c*hw {
		panic(fmt.Sprintf("reference: %s: x of %d values for shape [%d %d %d]", op, len(x), n, c, hw))
	}
	if len(gamma) != c || len(perChannel) != c {
		panic(fmt.Sprintf("reference: %s: per-channel slices of %d and %d values for %d channels", op, len(gamma), len(perChannel), c))
	}
}
