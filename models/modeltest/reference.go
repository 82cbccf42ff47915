package modeltest

import (
	"fmt"
	"math"

	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/tensor"
	"github.com/pipecast/pipecast/tensor/reference"
)

// A refModel is the float64 mirror of a layer tree, composed from the
// functions of package reference: the definition the layers are tested
// against. It reads the layers' parameters and buffers once, when it is
// built, and keeps its own gradients and running statistics.
type refModel struct {
	pass   models.Pass
	values map[*models.Param][]float64
	grads  map[*models.Param][]float64
	bufs   map[*models.Buffer][]float64 // running statistics
	counts map[*models.Buffer]int64     // num_batches_tracked
	root   refLayer
}

// refTensor is a float64 tensor of a reference model.
type refTensor struct {
	shape tensor.Shape
	v     []float64
}

// refLayer mirrors one models.Layer. Its forward keeps what its
// backward needs, so forwards and backwards alternate.
type refLayer interface {
	forward(x refTensor) refTensor
	backward(dy refTensor) refTensor
}

// newRefModel mirrors l under the mode, counters and flags of p.
func newRefModel(p models.Pass, l models.Layer) *refModel {
	m := &refModel{
		pass:   p,
		values: map[*models.Param][]float64{},
		grads:  map[*models.Param][]float64{},
		bufs:   map[*models.Buffer][]float64{},
		counts: map[*models.Buffer]int64{},
	}
	for _, np := range models.Params(l) {
		m.values[np.Param] = Host(np.Param.Value)
		m.grads[np.Param] = make([]float64, np.Param.Value.Len())
	}
	for _, nb := range models.Buffers(l) {
		if nb.Buffer.Value != nil {
			m.bufs[nb.Buffer] = Host(nb.Buffer.Value)
		} else {
			m.counts[nb.Buffer] = *nb.Buffer.Count
		}
	}
	m.root = m.build(l)
	return m
}

func (m *refModel) forward(x refTensor) refTensor   { return m.root.forward(x) }
func (m *refModel) backward(dy refTensor) refTensor { return m.root.backward(dy) }

// accumulate adds g into the reference gradient of p.
func (m *refModel) accumulate(p *models.Param, g []float64) {
	acc := m.grads[p]
	for i := range g {
		acc[i] += g[i]
	}
}

// value returns the reference value of p, nil for an absent parameter.
func (m *refModel) value(p *models.Param) []float64 {
	if p == nil {
		return nil
	}
	return m.values[p]
}

func (m *refModel) build(l models.Layer) refLayer {
	switch l := l.(type) {
	case *models.Conv2D:
		return &refConv{m: m, l: l}
	case *models.Linear:
		return &refLinear{m: m, l: l}
	case *models.BatchNorm2D:
		return &refBatchNorm{m: m, l: l}
	case *models.ReLU:
		return &refReLU{}
	case *models.MaxPool2D:
		return &refMaxPool{p: l.P}
	case *models.AvgPool2D:
		return &refAvgPool{p: l.P}
	case *models.AdaptiveAvgPool2D:
		return &refAdaptive{oh: l.OH, ow: l.OW}
	case *models.Dropout:
		return &refDropout{m: m, l: l}
	case *models.Flatten:
		return &refFlatten{}
	case *models.Sequential:
		r := &refSequential{}
		for _, c := range l.Layers {
			r.layers = append(r.layers, m.build(c.Layer))
		}
		return r
	case *models.Concat:
		r := &refConcat{}
		for _, c := range l.Branches {
			r.branches = append(r.branches, m.build(c.Layer))
		}
		return r
	case *models.Residual:
		r := &refResidual{main: m.build(l.Main.Layer)}
		if l.Shortcut.Layer != nil {
			r.shortcut = m.build(l.Shortcut.Layer)
		}
		if l.Post != nil {
			r.post = m.build(l.Post)
		}
		return r
	}
	if r := m.buildDecoder(l); r != nil {
		return r
	}
	panic(fmt.Sprintf("modeltest: no reference for %T", l))
}

type refConv struct {
	m *refModel
	l *models.Conv2D
	x refTensor
}

func (r *refConv) forward(x refTensor) refTensor {
	r.x = x
	c := r.l.Cfg
	n, h, w := x.shape[0], x.shape[2], x.shape[3]
	y := reference.Conv2D(x.v, n, c.In, h, w, r.m.value(r.l.Weight), c.Out, c.KH, c.KW, r.m.value(r.l.Bias), c.Params())
	oh, ow := c.Params().OutSize(h, w, c.KH, c.KW)
	return refTensor{tensor.Shape{n, c.Out, oh, ow}, y}
}

func (r *refConv) backward(dy refTensor) refTensor {
	c := r.l.Cfg
	n, h, w := r.x.shape[0], r.x.shape[2], r.x.shape[3]
	dx := reference.Conv2DBackwardData(dy.v, n, c.In, h, w, r.m.value(r.l.Weight), c.Out, c.KH, c.KW, c.Params())
	dw, db := reference.Conv2DBackwardFilter(r.x.v, n, c.In, h, w, dy.v, c.Out, c.KH, c.KW, c.Params())
	r.m.accumulate(r.l.Weight, dw)
	if r.l.Bias != nil {
		r.m.accumulate(r.l.Bias, db)
	}
	return refTensor{r.x.shape, dx}
}

type refLinear struct {
	m *refModel
	l *models.Linear
	x refTensor
}

func (r *refLinear) forward(x refTensor) refTensor {
	r.x = x
	n := x.shape[0]
	return refTensor{tensor.Shape{n, r.l.Out}, reference.Linear(x.v, n, r.l.In, r.m.value(r.l.Weight), r.l.Out, r.m.value(r.l.Bias))}
}

func (r *refLinear) backward(dy refTensor) refTensor {
	n := r.x.shape[0]
	dx := reference.LinearBackwardData(dy.v, n, r.l.Out, r.m.value(r.l.Weight), r.l.In)
	dw, db := reference.LinearBackwardParams(r.x.v, n, r.l.In, dy.v, r.l.Out)
	r.m.accumulate(r.l.Weight, dw)
	if r.l.Bias != nil {
		r.m.accumulate(r.l.Bias, db)
	}
	return refTensor{r.x.shape, dx}
}

type refBatchNorm struct {
	m            *refModel
	l            *models.BatchNorm2D
	x            refTensor
	mean, invStd []float64 // nil after an evaluation forward
}

func (r *refBatchNorm) dims(s tensor.Shape) (n, c, hw int) {
	return s[0], s[1], tensor.Shape(s[2:]).Numel()
}

func (r *refBatchNorm) forward(x refTensor) refTensor {
	r.x = x
	l, m := r.l, r.m
	n, c, hw := r.dims(x.shape)
	gamma, beta := m.values[l.Weight], m.values[l.Bias]
	rm, rv := m.bufs[l.RunningMean], m.bufs[l.RunningVar]
	if !m.pass.Train {
		r.mean, r.invStd = nil, nil
		return refTensor{x.shape, reference.BatchNormEval(x.v, n, c, hw, gamma, beta, rm, rv, l.P)}
	}
	if m.pass.FreezeStats {
		rm, rv = nil, nil
	}
	res := reference.BatchNormTrain(x.v, n, c, hw, gamma, beta, rm, rv, l.P)
	if !m.pass.FreezeStats {
		m.bufs[l.RunningMean], m.bufs[l.RunningVar] = res.RunMean, res.RunVar
		m.counts[l.NumBatchesTracked]++
	}
	r.mean, r.invStd = res.Mean, res.InvStd
	return refTensor{x.shape, res.Y}
}

func (r *refBatchNorm) backward(dy refTensor) refTensor {
	l, m := r.l, r.m
	n, c, hw := r.dims(r.x.shape)
	gamma := m.values[l.Weight]
	if r.mean != nil {
		dx, dg, db := reference.BatchNormBackward(r.x.v, dy.v, n, c, hw, gamma, r.mean, r.invStd)
		m.accumulate(l.Weight, dg)
		m.accumulate(l.Bias, db)
		return refTensor{r.x.shape, dx}
	}
	// The evaluation forward is affine per channel: y = (x − μ)·s·γ + β.
	rm, rv := m.bufs[l.RunningMean], m.bufs[l.RunningVar]
	dx, dg, db := make([]float64, len(dy.v)), make([]float64, c), make([]float64, c)
	for i := 0; i < n; i++ {
		for ch := 0; ch < c; ch++ {
			s := 1 / math.Sqrt(rv[ch]+float64(l.P.Eps))
			for k := (i*c + ch) * hw; k < (i*c+ch+1)*hw; k++ {
				dx[k] = dy.v[k] * gamma[ch] * s
				dg[ch] += dy.v[k] * (r.x.v[k] - rm[ch]) * s
				db[ch] += dy.v[k]
			}
		}
	}
	m.accumulate(l.Weight, dg)
	m.accumulate(l.Bias, db)
	return refTensor{r.x.shape, dx}
}

type refReLU struct{ y refTensor }

func (r *refReLU) forward(x refTensor) refTensor {
	r.y = refTensor{x.shape, reference.ReLU(x.v)}
	return r.y
}

func (r *refReLU) backward(dy refTensor) refTensor {
	return refTensor{dy.shape, reference.ReLUBackward(r.y.v, dy.v)}
}

type refMaxPool struct {
	p tensor.Pool2DParams
	x refTensor
}

func (r *refMaxPool) forward(x refTensor) refTensor {
	r.x = x
	s := x.shape
	oh, ow := r.p.OutSize(s[2], s[3])
	return refTensor{tensor.Shape{s[0], s[1], oh, ow}, reference.MaxPool2D(x.v, s[0], s[1], s[2], s[3], r.p)}
}

func (r *refMaxPool) backward(dy refTensor) refTensor {
	s := r.x.shape
	return refTensor{s, reference.MaxPool2DBackward(r.x.v, dy.v, s[0], s[1], s[2], s[3], r.p)}
}

type refAvgPool struct {
	p  tensor.Pool2DParams
	in tensor.Shape
}

func (r *refAvgPool) forward(x refTensor) refTensor {
	s := x.shape
	r.in = s
	oh, ow := r.p.OutSize(s[2], s[3])
	return refTensor{tensor.Shape{s[0], s[1], oh, ow}, reference.AvgPool2D(x.v, s[0], s[1], s[2], s[3], r.p)}
}

func (r *refAvgPool) backward(dy refTensor) refTensor {
	s := r.in
	return refTensor{s, reference.AvgPool2DBackward(dy.v, s[0], s[1], s[2], s[3], r.p)}
}

type refAdaptive struct {
	oh, ow int
	in     tensor.Shape
}

func (r *refAdaptive) forward(x refTensor) refTensor {
	s := x.shape
	r.in = s
	return refTensor{tensor.Shape{s[0], s[1], r.oh, r.ow}, reference.AdaptiveAvgPool2D(x.v, s[0], s[1], s[2], s[3], r.oh, r.ow)}
}

func (r *refAdaptive) backward(dy refTensor) refTensor {
	s := r.in
	return refTensor{s, reference.AdaptiveAvgPool2DBackward(dy.v, s[0], s[1], s[2], s[3], r.oh, r.ow)}
}

type refDropout struct {
	m *refModel
	l *models.Dropout
}

func (r *refDropout) active() bool { return r.m.pass.Train && r.l.P > 0 }

func (r *refDropout) key() tensor.DropoutKey {
	p := r.m.pass
	return tensor.DropoutKey{Seed: p.Seed, Step: p.Step, Layer: r.l.ID, Sample: p.Sample}
}

func (r *refDropout) forward(x refTensor) refTensor {
	if !r.active() {
		return x
	}
	return refTensor{x.shape, reference.DropoutForward(x.v, x.shape[0], r.l.P, r.key())}
}

func (r *refDropout) backward(dy refTensor) refTensor {
	if !r.active() {
		return dy
	}
	return refTensor{dy.shape, reference.DropoutBackward(dy.v, dy.shape[0], r.l.P, r.key())}
}

type refFlatten struct{ in tensor.Shape }

func (r *refFlatten) forward(x refTensor) refTensor {
	r.in = x.shape
	return refTensor{tensor.Shape{x.shape[0], len(x.v) / x.shape[0]}, x.v}
}

func (r *refFlatten) backward(dy refTensor) refTensor { return refTensor{r.in, dy.v} }
