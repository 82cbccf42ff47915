package modeltest

import (
	"math"

	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/tensor"
)

// The float64 mirrors of decoder transformers' layers. Their arithmetic
// is written here from the definitions (Hugging Face's modules, torch's
// nn.LayerNorm and nn.Embedding), on purpose apart from the float32
// kernels and from the kernels' own references in tensor/reference, so
// that a misreading shared by a kernel and its reference still shows.
// Projections and dropouts are their layers' mirrors (refLinear,
// refDropout).

// buildDecoder mirrors the decoder transformers' layers, or returns nil
// for any other layer.
func (m *refModel) buildDecoder(l models.Layer) refLayer {
	switch l := l.(type) {
	case *models.Embedding:
		return &refEmbedding{m: m, l: l}
	case *models.PositionEmbedding:
		return &refPositionEmbedding{m: m, l: l}
	case *models.LayerNorm:
		return &refNorm{m: m, weight: l.Weight, bias: l.Bias, dim: l.Dim, eps: float64(l.Eps), centre: true}
	case *models.RMSNorm:
		return &refNorm{m: m, weight: l.Weight, dim: l.Dim, eps: float64(l.Eps)}
	case *models.GELUTanh:
		return &refGELU{}
	case *models.PerToken:
		return &refPerToken{inner: m.build(l.Layer)}
	case *models.GatedMLP:
		return &refGatedMLP{gate: m.build(l.Gate), up: m.build(l.Up), down: m.build(l.Down)}
	case *models.Attention:
		return m.buildAttention(l)
	case *models.DecoderLayer:
		half := func(norm, sub models.Child) refLayer {
			return &refResidual{main: &refSequential{layers: []refLayer{m.build(norm.Layer), m.build(sub.Layer)}}}
		}
		return &refSequential{layers: []refLayer{half(l.Norm1, l.Attn), half(l.Norm2, l.MLP)}}
	}
	return nil
}

// refEmbedding selects rows by id; its backward returns no input
// gradient (a nil v).
type refEmbedding struct {
	m   *refModel
	l   *models.Embedding
	ids []int
	in  tensor.Shape
}

func (r *refEmbedding) forward(x refTensor) refTensor {
	d, w := r.l.Dim, r.m.value(r.l.Weight)
	r.in, r.ids = x.shape, make([]int, len(x.v))
	y := make([]float64, len(x.v)*d)
	for i, id := range x.v {
		r.ids[i] = int(math.Round(id))
		copy(y[i*d:(i+1)*d], w[r.ids[i]*d:(r.ids[i]+1)*d])
	}
	return refTensor{append(x.shape.Clone(), d), y}
}

func (r *refEmbedding) backward(dy refTensor) refTensor {
	d := r.l.Dim
	g := make([]float64, r.l.Vocab*d)
	for i, id := range r.ids {
		for j := range d {
			g[id*d+j] += dy.v[i*d+j]
		}
	}
	r.m.accumulate(r.l.Weight, g)
	return refTensor{r.in, nil}
}

// refPositionEmbedding adds row s of the table to every token at
// position s.
type refPositionEmbedding struct {
	m *refModel
	l *models.PositionEmbedding
}

func (r *refPositionEmbedding) forward(x refTensor) refTensor {
	w := r.m.value(r.l.Weight)
	per := x.shape[1] * x.shape[2] // one sequence: S positions of D
	y := make([]float64, len(x.v))
	for i := range y {
		y[i] = x.v[i] + w[i%per]
	}
	return refTensor{x.shape, y}
}

func (r *refPositionEmbedding) backward(dy refTensor) refTensor {
	per := dy.shape[1] * dy.shape[2]
	g := make([]float64, r.l.Positions*r.l.Dim)
	for i, v := range dy.v {
		g[i%per] += v
	}
	r.m.accumulate(r.l.Weight, g)
	return dy
}

// refNorm is torch's nn.LayerNorm (centre: subtract the mean, add the
// bias) or LlamaRMSNorm over each row of dim values.
type refNorm struct {
	m            *refModel
	weight, bias *models.Param
	dim          int
	eps          float64
	centre       bool
	x            refTensor
	mean, rstd   []float64
}

func (r *refNorm) forward(x refTensor) refTensor {
	r.x = x
	d, n := r.dim, len(x.v)/r.dim
	gamma, beta := r.m.value(r.weight), r.m.value(r.bias)
	r.mean, r.rstd = make([]float64, n), make([]float64, n)
	y := make([]float64, len(x.v))
	for i := range n {
		row := x.v[i*d : (i+1)*d]
		mu := 0.0
		if r.centre {
			for _, v := range row {
				mu += v
			}
			mu /= float64(d)
		}
		ss := 0.0 // the biased variance, or the mean square
		for _, v := range row {
			ss += (v - mu) * (v - mu)
		}
		r.mean[i], r.rstd[i] = mu, 1/math.Sqrt(ss/float64(d)+r.eps)
		for j, v := range row {
			y[i*d+j] = (v - mu) * r.rstd[i] * gamma[j]
			if beta != nil {
				y[i*d+j] += beta[j]
			}
		}
	}
	return refTensor{x.shape, y}
}

// backward differentiates y = x̂·γ + β with x̂ = (x − μ)·rstd: dx =
// rstd·(g − mean(g) − x̂·mean(g·x̂)) for g = dy·γ, the mean(g) term only
// where μ was subtracted (for RMSNorm μ = 0 and the formula is dx =
// rstd·g − x·rstd³·mean(g·x)).
func (r *refNorm) backward(dy refTensor) refTensor {
	d, n := r.dim, len(dy.v)/r.dim
	gamma := r.m.value(r.weight)
	dx := make([]float64, len(dy.v))
	dg, db := make([]float64, d), make([]float64, d)
	for i := range n {
		var mg, mgx float64
		for j := range d {
			k := i*d + j
			xh := (r.x.v[k] - r.mean[i]) * r.rstd[i]
			g := dy.v[k] * gamma[j]
			mg += g
			mgx += g * xh
			dg[j] += dy.v[k] * xh
			db[j] += dy.v[k]
		}
		mg, mgx = mg/float64(d), mgx/float64(d)
		if !r.centre {
			mg = 0
		}
		for j := range d {
			k := i*d + j
			xh := (r.x.v[k] - r.mean[i]) * r.rstd[i]
			dx[k] = r.rstd[i] * (dy.v[k]*gamma[j] - mg - xh*mgx)
		}
	}
	r.m.accumulate(r.weight, dg)
	if r.bias != nil {
		r.m.accumulate(r.bias, db)
	}
	return refTensor{dy.shape, dx}
}

// geluC is √(2/π), gelu_new's constant.
var geluC = math.Sqrt(2 / math.Pi)

// refGELU is gelu_new, ½x(1 + tanh(√(2/π)(x + 0.044715x³))).
type refGELU struct{ x refTensor }

func (r *refGELU) forward(x refTensor) refTensor {
	r.x = x
	y := make([]float64, len(x.v))
	for i, v := range x.v {
		y[i] = 0.5 * v * (1 + math.Tanh(geluC*(v+0.044715*v*v*v)))
	}
	return refTensor{x.shape, y}
}

func (r *refGELU) backward(dy refTensor) refTensor {
	dx := make([]float64, len(dy.v))
	for i, v := range r.x.v {
		t := math.Tanh(geluC * (v + 0.044715*v*v*v))
		dx[i] = dy.v[i] * (0.5*(1+t) + 0.5*v*(1-t*t)*geluC*(1+3*0.044715*v*v))
	}
	return refTensor{dy.shape, dx}
}

// refPerToken runs its inner mirror on the rows [N, F] of x.
type refPerToken struct {
	inner refLayer
	in    tensor.Shape
}

func (r *refPerToken) forward(x refTensor) refTensor {
	r.in = x.shape
	f := x.shape[len(x.shape)-1]
	y := r.inner.forward(refTensor{tensor.Shape{len(x.v) / f, f}, x.v})
	return refTensor{append(x.shape[:len(x.shape)-1].Clone(), y.shape[1]), y.v}
}

func (r *refPerToken) backward(dy refTensor) refTensor {
	g := dy.shape[len(dy.shape)-1]
	dx := r.inner.backward(refTensor{tensor.Shape{len(dy.v) / g, g}, dy.v})
	return refTensor{r.in, dx.v}
}

// refGatedMLP is LlamaMLP, down(silu(gate(x))·up(x)).
type refGatedMLP struct {
	gate, up, down refLayer
	in             tensor.Shape
	g, u           []float64
}

func sigmoid(v float64) float64 { return 1 / (1 + math.Exp(-v)) }

func (r *refGatedMLP) forward(x refTensor) refTensor {
	r.in = x.shape
	d := x.shape[2]
	rows := refTensor{tensor.Shape{len(x.v) / d, d}, x.v}
	g, u := r.gate.forward(rows), r.up.forward(rows)
	r.g, r.u = g.v, u.v
	h := make([]float64, len(g.v))
	for i, v := range g.v {
		h[i] = v * sigmoid(v) * u.v[i]
	}
	y := r.down.forward(refTensor{g.shape, h})
	return refTensor{x.shape, y.v}
}

// backward: d silu(g)/dg = σ(g)·(1 + g·(1 − σ(g))).
func (r *refGatedMLP) backward(dy refTensor) refTensor {
	d := dy.shape[2]
	dh := r.down.backward(refTensor{tensor.Shape{len(dy.v) / d, d}, dy.v})
	dg, du := make([]float64, len(dh.v)), make([]float64, len(dh.v))
	for i, g := range r.g {
		s := sigmoid(g)
		du[i] = dh.v[i] * g * s
		dg[i] = dh.v[i] * r.u[i] * s * (1 + g*(1-s))
	}
	dx := r.gate.backward(refTensor{dh.shape, dg})
	dxu := r.up.backward(refTensor{dh.shape, du})
	if dx.v == nil || dxu.v == nil {
		return refTensor{r.in, nil}
	}
	for i := range dx.v {
		dx.v[i] += dxu.v[i]
	}
	return refTensor{r.in, dx.v}
}
