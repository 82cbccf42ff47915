package reference

import (
	"fmt"
	"math"

	"github.com/pipecast/pipecast/tensor"
)

// The kernels of decoder transformers other than attention
// (tensor.TransformerKernels), as Hugging Face's GPT-2 and Llama compute
// them. Parameter gradients are this call's contribution alone; a
// backend accumulates them into its gradients.

// Embedding returns the rows of table [v, d] that ids name: y[i, :] =
// table[ids[i], :], as torch's nn.Embedding.
func Embedding(ids []int, table []float64, d int) []float64 {
	embeddingCheck("embedding", ids, table, d)
	y := make([]float64, len(ids)*d)
	for i, id := range ids {
		for j := 0; j < d; j++ {
			y[i*d+j] = table[id*d+j]
		}
	}
	return y
}

// EmbeddingBackward returns the gradient of a table of v rows of d values
// from the rows' gradient dy: dtable[ids[i], :] += dy[i, :], the rows of
// a repeated token summed.
func EmbeddingBackward(ids []int, dy []float64, v, d int) []float64 {
	dtable := make([]float64, v*d)
	embeddingCheck("embedding backward", ids, dtable, d)
	if len(dy) != len(ids)*d {
		panic(fmt.Sprintf("reference: embedding backward: dy of %d values for %d ids of %d", len(dy), len(ids), d))
	}
	for i, id := range ids {
		for j := 0; j < d; j++ {
			dtable[id*d+j] += dy[i*d+j]
		}
	}
	return dtable
}

func embeddingCheck(op string, ids []int, table []float64, d int) {
	if d < 1 || len(table)%d != 0 {
		panic(fmt.Sprintf("reference: %s: table of %d values in rows of %d", op, len(table), d))
	}
	v := len(table) / d
	for _, id := range ids {
		if id < 0 || id >= v {
			panic(fmt.Sprintf("reference: %s: token id %d outside [0, %d)", op, id, v))
		}
	}
}

// LayerNormResult is what a layer norm's forward computes.
type LayerNormResult struct {
	// Y is the output, shaped like the input.
	Y []float64
	// Mean and Rstd are each row's mean and 1/√(var + eps), var the
	// biased variance: what a backend saves for the backward.
	Mean, Rstd []float64
}

// LayerNorm is torch's nn.LayerNorm over the last dimension of x, rows of
// d = len(gamma) values:
//
//	mean = Σ x / d,  var = Σ (x − mean)² / d,  rstd = 1/√(var + eps)
//	y = (x − mean)·rstd·gamma + beta.
func LayerNorm(x, gamma, beta []float64, eps float64) LayerNormResult {
	n, d := normCheck("layer norm", x, gamma, beta)
	r := LayerNormResult{Y: make([]float64, len(x)), Mean: make([]float64, n), Rstd: make([]float64, n)}
	for i := 0; i < n; i++ {
		row := x[i*d : (i+1)*d]
		sum := 0.0
		for _, v := range row {
			sum += v
		}
		mean := sum / float64(d)
		sq := 0.0
		for _, v := range row {
			sq += (v - mean) * (v - mean)
		}
		r.Mean[i], r.Rstd[i] = mean, 1/math.Sqrt(sq/float64(d)+eps)
		for j, v := range row {
			r.Y[i*d+j] = (v-mean)*r.Rstd[i]*gamma[j] + beta[j]
		}
	}
	return r
}

// LayerNormBackward returns the gradients of LayerNorm given the output
// gradient dy and the mean and rstd the forward normalised with (x̂ =
// (x − mean)·rstd):
//
//	dx     = rstd·(g − Σ g / d − x̂·Σ g·x̂ / d),  g = dy·gamma
//	dgamma = Σ dy·x̂,  dbeta = Σ dy,
//
// the sums in dx running over the row, those of the parameters over the
// rows.
func LayerNormBackward(x, dy, gamma, mean, rstd []float64) (dx, dgamma, dbeta []float64) {
	n, d := normCheck("layer norm backward", x, gamma, gamma)
	normStatsCheck("layer norm backward", x, dy, n, mean, rstd)
	dx, dgamma, dbeta = make([]float64, len(x)), make([]float64, d), make([]float64, d)
	for i := 0; i < n; i++ {
		sg, sgx := 0.0, 0.0
		for j := 0; j < d; j++ {
			k := i*d + j
			xhat := (x[k] - mean[i]) * rstd[i]
			sg += dy[k] * gamma[j]
			sgx += dy[k] * gamma[j] * xhat
			dgamma[j] += dy[k] * xhat
			dbeta[j] += dy[k]
		}
		for j := 0; j < d; j++ {
			k := i*d + j
			xhat := (x[k] - mean[i]) * rstd[i]
			dx[k] = rstd[i] * (dy[k]*gamma[j] - sg/float64(d) - xhat*sgx/float64(d))
		}
	}
	return dx, dgamma, dbeta
}

// RMSNorm is LlamaRMSNorm on rows of d = len(gamma) values:
//
//	rstd = 1/√(Σ x² / d + eps),  y = x·rstd·gamma;
//
// it returns y and each row's rstd.
func RMSNorm(x, gamma []float64, eps float64) (y, rstd []float64) {
	n, d := normCheck("rms norm", x, gamma, gamma)
	y, rstd = make([]float64, len(x)), make([]float64, n)
	for i := 0; i < n; i++ {
		sq := 0.0
		for _, v := range x[i*d : (i+1)*d] {
			sq += v * v
		}
		rstd[i] = 1 / math.Sqrt(sq/float64(d)+eps)
		for j := 0; j < d; j++ {
			y[i*d+j] = x[i*d+j] * rstd[i] * gamma[j]
		}
	}
	return y, rstd
}

// RMSNormBackward returns the gradients of RMSNorm given dy and the rstd
// the forward normalised with (x̂ = x·rstd, g = dy·gamma):
//
//	dx = rstd·(g − x̂·Σ g·x̂ / d),  dgamma = Σ dy·x̂.
func RMSNormBackward(x, dy, gamma, rstd []float64) (dx, dgamma []float64) {
	n, d := normCheck("rms norm backward", x, gamma, gamma)
	normStatsCheck("rms norm backward", x, dy, n, rstd, rstd)
	dx, dgamma = make([]float64, len(x)), make([]float64, d)
	for i := 0; i < n; i++ {
		sgx := 0.0
		for j := 0; j < d; j++ {
			k := i*d + j
			sgx += dy[k] * gamma[j] * x[k] * rstd[i]
			dgamma[j] += dy[k] * x[k] * rstd[i]
		}
		for j := 0; j < d; j++ {
			k := i*d + j
			dx[k] = rstd[i] * (dy[k]*gamma[j] - x[k]*rstd[i]*sgx/float64(d))
		}
	}
	return dx, dgamma
}

func normCheck(op string, x, gamma, beta []float64) (n, d int) {
	d = len(gamma)
	if d == 0 || len(x)%d != 0 || len(beta) != d {
		panic(fmt.Sprintf("reference: %s: x of %d values in rows of %d (beta %d)", op, len(x), d, len(beta)))
	}
	return len(x) / d, d
}

func normStatsCheck(op string, x, dy []float64, n int, stats ...[]float64) {
	if len(dy) != len(x) {
		panic(fmt.Sprintf("reference: %s: dy of %d values for x of %d", op, len(dy), len(x)))
	}
	for _, s := range stats {
		if len(s) != n {
			panic(fmt.Sprintf("reference: %s: statistics of %d values for %d rows", op, len(s), n))
		}
	}
}

// GELUTanh is GPT-2's GELU ("gelu_new", torch's gelu with approximate
// "tanh"): y = ½x(1 + tanh(√(2/π)(x + 0.044715x³))).
func GELUTanh(x []float64) []float64 {
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = 0.5 * v * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(v+0.044715*v*v*v)))
	}
	return y
}

// GELUTanhBackward returns dx = dy·gelu′(x), the derivative of GELUTanh:
// with u = √(2/π)(x + 0.044715x³) and t = tanh u,
//
//	gelu′(x) = ½(1 + t) + ½x(1 − t²)·√(2/π)(1 + 3·0.044715x²).
func GELUTanhBackward(x, dy []float64) []float64 {
	activationCheck("gelu backward", x, dy)
	dx := make([]float64, len(x))
	for i, v := range x {
		t := math.Tanh(math.Sqrt(2/math.Pi) * (v + 0.044715*v*v*v))
		dx[i] = dy[i] * (0.5*(1+t) + 0.5*v*(1-t*t)*math.Sqrt(2/math.Pi)*(1+3*0.044715*v*v))
	}
	return dx
}

// SwiGLU is Llama's gated activation: y = silu(gate)·up, silu(g) =
// g·σ(g) = g/(1 + e^(−g)).
func SwiGLU(gate, up []float64) []float64 {
	activationCheck("swiglu", gate, up)
	y := make([]float64, len(gate))
	for i, g := range gate {
		y[i] = g / (1 + math.Exp(-g)) * up[i]
	}
	return y
}

// SwiGLUBackward returns the gradients of SwiGLU: dgate = dy·up·silu′(gate)
// with silu′(g) = σ(g)(1 + g(1 − σ(g))), and dup = dy·silu(gate).
func SwiGLUBackward(gate, up, dy []float64) (dgate, dup []float64) {
	activationCheck("swiglu backward", gate, up, dy)
	dgate, dup = make([]float64, len(gate)), make([]float64, len(gate))
	for i, g := range gate {
		s := 1 / (1 + math.Exp(-g))
		dgate[i] = dy[i] * up[i] * s * (1 + g*(1-s))
		dup[i] = dy[i] * g * s
	}
	return dgate, dup
}

// RoPE is Hugging Face Llama's rotary position embedding (apply_rotary_pos_emb
// with rotate_half) on x [B, p.Seq, p.Heads, p.HeadDim]: each head's value
// i < hd/2 pairs with value i + hd/2 and the pair turns by the angle a =
// s·θ^(−2i/hd) of its token's position s (−a with p.Inverse):
//
//	y[i]      = x[i]·cos a − x[i+hd/2]·sin a
//	y[i+hd/2] = x[i+hd/2]·cos a + x[i]·sin a.
//
// A rotation's transpose is its inverse, so RoPE with p.Inverse is also
// the backward of RoPE.
func RoPE(x []float64, p tensor.RoPEParams) []float64 {
	per := p.Seq * p.Heads * p.HeadDim
	if p.Seq < 1 || p.Heads < 1 || p.HeadDim < 2 || p.HeadDim%2 != 0 || len(x)%per != 0 {
		panic(fmt.Sprintf("reference: rope: %d values for sizes %+v", len(x), p))
	}
	sign, hd, half := 1.0, p.HeadDim, p.HeadDim/2
	if p.Inverse {
		sign = -1
	}
	y := make([]float64, len(x))
	for b := 0; b < len(x)/per; b++ {
		for s := 0; s < p.Seq; s++ {
			for h := 0; h < p.Heads; h++ {
				at := ((b*p.Seq+s)*p.Heads + h) * hd
				for i := 0; i < half; i++ {
					a := sign * float64(s) * math.Pow(p.Theta, -float64(2*i)/float64(hd))
					x1, x2 := x[at+i], x[at+i+half]
					y[at+i] = x1*math.Cos(a) - x2*math.Sin(a)
					y[at+i+half] = x2*math.Cos(a) + x1*math.Sin(a)
				}
			}
		}
	}
	return y
}

func activationCheck(op string, a []float64, others ...[]float64) {
	for _, o := range others {
		if len(o) != len(a) {
			panic(fmt.Sprintf("reference: %s: %d values beside %d", op, len(o), len(a)))
		}
	}
}
