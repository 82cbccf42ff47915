package transformerops

import "math"

// The activations of decoder transformers' MLPs, elementwise: GPT-2's
// GELU in its tanh form and Llama's SwiGLU. A kernel sharing them out
// over threads passes each thread sub-slices. Each value is computed in
// float64, where Go's tanh and exp are, and rounded once.

// geluScale is √(2/π), geluCubic the cubic term's weight, of Hendrycks and
// Gimpel's tanh approximation of GELU ("Gaussian Error Linear Units",
// 2016, §2) as GPT-2 and Hugging Face's "gelu_new" write it.
const (
	geluScale = 0.7978845608028654 // math.Sqrt(2 / math.Pi)
	geluCubic = 0.044715
)

// GELUTanhForward sets y = ½x(1 + tanh(√(2/π)(x + 0.044715x³))).
func GELUTanhForward(x, y []float32) {
	y = y[:len(x)]
	for i, v := range x {
		u := float64(v)
		t := math.Tanh(geluScale * (u + geluCubic*u*u*u))
		y[i] = float32(0.5 * u * (1 + t))
	}
}

// GELUTanhBackward sets dx = dy·gelu′(x), with t the forward's tanh:
//
//	gelu′(x) = ½(1 + t) + ½x(1 − t²)·√(2/π)(1 + 3·0.044715x²).
func GELUTanhBackward(x, dy, dx []float32) {
	dy, dx = dy[:len(x)], dx[:len(x)]
	for i, v := range x {
		u := float64(v)
		t := math.Tanh(geluScale * (u + geluCubic*u*u*u))
		grad := 0.5*(1+t) + 0.5*u*(1-t*t)*geluScale*(1+3*geluCubic*u*u)
		dx[i] = float32(float64(dy[i]) * grad)
	}
}

// sigmoid is 1/(1 + e^(−g)): exactly 0 below g ≈ −709.8, where e^(−g)
// overflows to +Inf, and 1 above g ≈ 36.7; never NaN for a finite g.
func sigmoid(g float64) float64 { return 1 / (1 + math.Exp(-g)) }

// SwiGLUForward sets y = silu(gate)·up, silu(g) = g·σ(g) (Shazeer, "GLU
// Variants Improve Transformer", 2020, §2; Llama's MLP).
func SwiGLUForward(gate, up, y []float32) {
	up, y = up[:len(gate)], y[:len(gate)]
	for i, v := range gate {
		g := float64(v)
		y[i] = float32(g * sigmoid(g) * float64(up[i]))
	}
}

// SwiGLUBackward sets dgate = dy·up·silu′(gate) and dup = dy·silu(gate),
// silu′(g) = σ(g)(1 + g(1 − σ(g))); a nil dgate or dup is not computed.
func SwiGLUBackward(gate, up, dy, dgate, dup []float32) {
	up, dy = up[:len(gate)], dy[:len(gate)]
	for i, v := range gate {
		g, dyi := float64(v), float64(dy[i])
		s := sigmoid(g)
		if dgate != nil {
			dgate[i] = float32(dyi * float64(up[i]) * s * (1 + g*(1-s)))
		}
		if dup != nil {
			dup[i] = float32(dyi * g * s)
		}
	}
}
