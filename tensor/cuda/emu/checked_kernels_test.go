//go:build cudaemu

package emu

import (
	"fmt"
	"math"

	"github.com/pipecast/pipecast/tensor"
)

// bnShape returns x's batch, channels and values per channel and sample.
func bnShape(x *tensor.Tensor) (n, c, hw int) {
	n, c = x.Dim(0), x.Dim(1)
	return n, c, x.Len() / (n * c)
}

// bnStats are one channel's statistics in float64: the mean, the biased
// variance, and the means of |x| and x².
type bnStats struct{ mean, variance, meanAbs, meanSq float64 }

func channelStats(x []float32, n, c, hw int) []bnStats {
	st := make([]bnStats, c)
	m := float64(n * hw)
	for ch := range c {
		s := &st[ch]
		for i := range n {
			for _, v := range x[(i*c+ch)*hw : (i*c+ch+1)*hw] {
				s.mean += float64(v)
				s.meanAbs += math.Abs(float64(v))
				s.meanSq += float64(v) * float64(v)
			}
		}
		s.mean /= m
		s.meanAbs /= m
		s.meanSq /= m
		s.variance = math.Max(0, s.meanSq-s.mean*s.mean)
	}
	return st
}

func (d *checkedDevice) BatchNormTrain(x, gamma, beta, y, runMean, runVar, saveMean, saveInvStd *tensor.Tensor, p tensor.BatchNormParams) {
	args := []*tensor.Tensor{x, gamma, beta, y, runMean, runVar, saveMean, saveInvStd}
	n, c, hw := bnShape(x)
	// The bounds: the mean's rounding is that of Σ|x|; the variance's,
	// computed in one pass or two, that of Σx², which moves invStd =
	// (var + eps)^-½ by ½·invStd³ of it; y = (x − mean)·invStd·γ + β
	// inherits both.
	bound := func(pre [][]float32) [][]float64 {
		st := channelStats(pre[0], n, c, hw)
		m := float64(n * hw)
		out := make([][]float64, len(args))
		out[3] = make([]float64, x.Len())
		var rm, rv []float64
		if runMean != nil {
			rm, rv = make([]float64, c), make([]float64, c)
		}
		sm, si := make([]float64, c), make([]float64, c)
		for ch := range c {
			s := st[ch]
			inv := 1 / math.Sqrt(s.variance+float64(p.Eps))
			dinv := 0.5 * inv * inv * inv * s.meanSq
			g, b := math.Abs(float64(pre[1][ch])), math.Abs(float64(pre[2][ch]))
			for i := range n {
				for j := (i*c + ch) * hw; j < (i*c+ch+1)*hw; j++ {
					v := float64(pre[0][j])
					out[3][j] = g*inv*(math.Abs(v)+math.Abs(s.mean)+s.meanAbs) + g*math.Abs(v-s.mean)*dinv + b
				}
			}
			sm[ch], si[ch] = s.meanAbs, inv+dinv
			if rm != nil {
				mom := float64(p.Momentum)
				rm[ch] = math.Abs(float64(pre[4][ch])) + mom*s.meanAbs
				rv[ch] = math.Abs(float64(pre[5][ch])) + mom*(s.meanSq+s.variance)*m/math.Max(1, m-1)
			}
		}
		out[4], out[5], out[6], out[7] = rm, rv, sm, si
		return out
	}
	d.run(launch{op: "BatchNormTrain", args: args, outs: []int{3, 4, 5, 6, 7},
		gpu:   func() { d.Device.BatchNormTrain(x, gamma, beta, y, runMean, runVar, saveMean, saveInvStd, p) },
		cpu:   func(t []*tensor.Tensor) { d.cpu.BatchNormTrain(t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7], p) },
		bound: bound})
}

func (d *checkedDevice) BatchNormEval(x, gamma, beta, runMean, runVar, y *tensor.Tensor, p tensor.BatchNormParams) {
	args := []*tensor.Tensor{x, gamma, beta, runMean, runVar, y}
	n, c, hw := bnShape(x)
	bound := func(pre [][]float32) [][]float64 {
		out := make([][]float64, len(args))
		out[5] = make([]float64, x.Len())
		for ch := range c {
			inv := 1 / math.Sqrt(math.Abs(float64(pre[4][ch]))+float64(p.Eps))
			g, b, mu := math.Abs(float64(pre[1][ch])), math.Abs(float64(pre[2][ch])), math.Abs(float64(pre[3][ch]))
			for i := range n {
				for j := (i*c + ch) * hw; j < (i*c+ch+1)*hw; j++ {
					out[5][j] = g*inv*(math.Abs(float64(pre[0][j]))+mu) + b
				}
			}
		}
		return out
	}
	d.run(launch{op: "BatchNormEval", args: args, outs: []int{5},
		gpu:   func() { d.Device.BatchNormEval(x, gamma, beta, runMean, runVar, y, p) },
		cpu:   func(t []*tensor.Tensor) { d.cpu.BatchNormEval(t[0], t[1], t[2], t[3], t[4], t[5], p) },
		bound: bound})
}

func (d *checkedDevice) BatchNormBackward(x, dy, gamma, saveMean, saveInvStd, dx, dgamma, dbeta *tensor.Tensor) {
	args := []*tensor.Tensor{x, dy, gamma, saveMean, saveInvStd, dx, dgamma, dbeta}
	n, c, hw := bnShape(x)
	// With x̂ = (x − mean)·invStd from the saved statistics (the same on
	// both), dβ = Σdy, dγ = Σdy·x̂ and dx = γ·invStd·(dy − mean(dy) −
	// x̂·mean(dy·x̂)): each term counts with its magnitude, and x̂ with
	// |x| + |mean| (its own rounding).
	bound := func(pre [][]float32) [][]float64 {
		out := make([][]float64, len(args))
		out[5] = make([]float64, x.Len())
		out[6], out[7] = make([]float64, c), make([]float64, c)
		m := float64(n * hw)
		for ch := range c {
			mu, inv := float64(pre[3][ch]), math.Abs(float64(pre[4][ch]))
			g := math.Abs(float64(pre[2][ch]))
			var sdy, sdyx float64
			for i := range n {
				for j := (i*c + ch) * hw; j < (i*c+ch+1)*hw; j++ {
					a := math.Abs(float64(pre[1][j]))
					sdy += a
					sdyx += a * (math.Abs(float64(pre[0][j])) + math.Abs(mu)) * inv
				}
			}
			out[6][ch] = math.Abs(float64(pre[6][ch])) + sdyx
			out[7][ch] = math.Abs(float64(pre[7][ch])) + sdy
			for i := range n {
				for j := (i*c + ch) * hw; j < (i*c+ch+1)*hw; j++ {
					xh := (math.Abs(float64(pre[0][j])) + math.Abs(mu)) * inv
					out[5][j] = g * inv * (math.Abs(float64(pre[1][j])) + sdy/m + xh*sdyx/m)
				}
			}
		}
		return out
	}
	d.run(launch{op: "BatchNormBackward", args: args, outs: []int{5, 6, 7},
		gpu:   func() { d.Device.BatchNormBackward(x, dy, gamma, saveMean, saveInvStd, dx, dgamma, dbeta) },
		cpu:   func(t []*tensor.Tensor) { d.cpu.BatchNormBackward(t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7]) },
		bound: bound})
}

func (d *checkedDevice) ReLUForward(x, y *tensor.Tensor) {
	d.run(launch{op: "ReLUForward", args: []*tensor.Tensor{x, y}, outs: []int{1},
		gpu: func() { d.Device.ReLUForward(x, y) }, cpu: func(c []*tensor.Tensor) { d.cpu.ReLUForward(c[0], c[1]) }})
}

func (d *checkedDevice) ReLUBackward(y, dy, dx *tensor.Tensor) {
	d.run(launch{op: "ReLUBackward", args: []*tensor.Tensor{y, dy, dx}, outs: []int{2},
		gpu: func() { d.Device.ReLUBackward(y, dy, dx) }, cpu: func(c []*tensor.Tensor) { d.cpu.ReLUBackward(c[0], c[1], c[2]) }})
}

func (d *checkedDevice) MaxPool2DForward(x, y *tensor.Tensor, p tensor.Pool2DParams) {
	d.run(launch{op: "MaxPool2DForward", args: []*tensor.Tensor{x, y}, outs: []int{1},
		gpu: func() { d.Device.MaxPool2DForward(x, y, p) }, cpu: func(c []*tensor.Tensor) { d.cpu.MaxPool2DForward(c[0], c[1], p) }})
}

func (d *checkedDevice) MaxPool2DBackward(x, dy, dx *tensor.Tensor, p tensor.Pool2DParams) {
	// Overlapping windows sum their gradients into one input, in any
	// order: the bound is that sum of magnitudes, with x as it is so the
	// same maxima are chosen.
	args := []*tensor.Tensor{x, dy, dx}
	run := func(c []*tensor.Tensor) { d.cpu.MaxPool2DBackward(c[0], c[1], c[2], p) }
	d.run(launch{op: "MaxPool2DBackward", args: args, outs: []int{2},
		gpu: func() { d.Device.MaxPool2DBackward(x, dy, dx, p) }, cpu: run, bound: d.absBound(args, []int{2}, []int{0}, run)})
}

func (d *checkedDevice) AvgPool2DForward(x, y *tensor.Tensor, p tensor.Pool2DParams) {
	args := []*tensor.Tensor{x, y}
	run := func(c []*tensor.Tensor) { d.cpu.AvgPool2DForward(c[0], c[1], p) }
	d.run(launch{op: "AvgPool2DForward", args: args, outs: []int{1},
		gpu: func() { d.Device.AvgPool2DForward(x, y, p) }, cpu: run, bound: d.absBound(args, []int{1}, nil, run)})
}

func (d *checkedDevice) AvgPool2DBackward(dy, dx *tensor.Tensor, p tensor.Pool2DParams) {
	args := []*tensor.Tensor{dy, dx}
	run := func(c []*tensor.Tensor) { d.cpu.AvgPool2DBackward(c[0], c[1], p) }
	d.run(launch{op: "AvgPool2DBackward", args: args, outs: []int{1},
		gpu: func() { d.Device.AvgPool2DBackward(dy, dx, p) }, cpu: run, bound: d.absBound(args, []int{1}, nil, run)})
}

func (d *checkedDevice) AdaptiveAvgPool2DForward(x, y *tensor.Tensor) {
	args := []*tensor.Tensor{x, y}
	run := func(c []*tensor.Tensor) { d.cpu.AdaptiveAvgPool2DForward(c[0], c[1]) }
	d.run(launch{op: "AdaptiveAvgPool2DForward", args: args, outs: []int{1},
		gpu: func() { d.Device.AdaptiveAvgPool2DForward(x, y) }, cpu: run, bound: d.absBound(args, []int{1}, nil, run)})
}

func (d *checkedDevice) AdaptiveAvgPool2DBackward(dy, dx *tensor.Tensor) {
	args := []*tensor.Tensor{dy, dx}
	run := func(c []*tensor.Tensor) { d.cpu.AdaptiveAvgPool2DBackward(c[0], c[1]) }
	d.run(launch{op: "AdaptiveAvgPool2DBackward", args: args, outs: []int{1},
		gpu: func() { d.Device.AdaptiveAvgPool2DBackward(dy, dx) }, cpu: run, bound: d.absBound(args, []int{1}, nil, run)})
}

func (d *checkedDevice) ConcatChannels(dst *tensor.Tensor, srcs []*tensor.Tensor) {
	args := append([]*tensor.Tensor{dst}, srcs...)
	d.run(launch{op: "ConcatChannels", args: args, outs: []int{0},
		gpu: func() { d.Device.ConcatChannels(dst, srcs) }, cpu: func(c []*tensor.Tensor) { d.cpu.ConcatChannels(c[0], c[1:]) }})
}

func (d *checkedDevice) SplitChannels(src *tensor.Tensor, dsts []*tensor.Tensor) {
	args := append([]*tensor.Tensor{src}, dsts...)
	outs := make([]int, len(dsts))
	for i := range outs {
		outs[i] = i + 1
	}
	d.run(launch{op: "SplitChannels", args: args, outs: outs,
		gpu: func() { d.Device.SplitChannels(src, dsts) }, cpu: func(c []*tensor.Tensor) { d.cpu.SplitChannels(c[0], c[1:]) }})
}

func (d *checkedDevice) DropoutForward(x, y *tensor.Tensor, p float32, key tensor.DropoutKey) {
	args := []*tensor.Tensor{x, y}
	run := func(c []*tensor.Tensor) { d.cpu.DropoutForward(c[0], c[1], p, key) }
	d.run(launch{op: "DropoutForward", args: args, outs: []int{1},
		gpu: func() { d.Device.DropoutForward(x, y, p, key) }, cpu: run, bound: d.absBound(args, []int{1}, nil, run)})
}

func (d *checkedDevice) DropoutBackward(dy, dx *tensor.Tensor, p float32, key tensor.DropoutKey) {
	args := []*tensor.Tensor{dy, dx}
	run := func(c []*tensor.Tensor) { d.cpu.DropoutBackward(c[0], c[1], p, key) }
	d.run(launch{op: "DropoutBackward", args: args, outs: []int{1},
		gpu: func() { d.Device.DropoutBackward(dy, dx, p, key) }, cpu: run, bound: d.absBound(args, []int{1}, nil, run)})
}

func (d *checkedDevice) SoftmaxCrossEntropy(logits *tensor.Tensor, labels []int32, dlogits *tensor.Tensor, scale float32) float64 {
	var got, want float64
	args := []*tensor.Tensor{logits, dlogits}
	n, k := logits.Dim(0), logits.Dim(1)
	// Each row's −log softmax is log Σ exp(z − max) − (z_label − max):
	// its rounding is that of |z| and of log(classes); the gradient's,
	// scale·(softmax − onehot), that of its largest terms.
	var lossBound float64
	bound := func(pre [][]float32) [][]float64 {
		out := make([][]float64, len(args))
		if dlogits != nil {
			out[1] = make([]float64, n*k)
		}
		lossBound = 0
		for i := range n {
			var big float64
			for _, v := range pre[0][i*k : (i+1)*k] {
				big = math.Max(big, math.Abs(float64(v)))
			}
			lossBound += math.Abs(float64(scale)) * (2*big + math.Log(float64(k)) + 1)
			for j := i * k; j < (i+1)*k && out[1] != nil; j++ {
				out[1][j] = math.Abs(float64(scale)) * (1 + 2*big)
			}
		}
		return out
	}
	d.run(launch{op: "SoftmaxCrossEntropy", args: args, outs: []int{1},
		gpu:   func() { got = d.Device.SoftmaxCrossEntropy(logits, labels, dlogits, scale) },
		cpu:   func(c []*tensor.Tensor) { want = d.cpu.SoftmaxCrossEntropy(c[0], labels, c[1], scale) },
		bound: bound})
	checks.recordScalar("SoftmaxCrossEntropy loss", fmt.Sprintf("logits %v", logits.Shape()), got, want, lossBound)
	return got
}

func (d *checkedDevice) SGDStep(w, g, buf *tensor.Tensor, p tensor.SGDParams, first bool) {
	args := []*tensor.Tensor{w, g, buf}
	// d = g + wd·w; buf = d, or m·buf + (1 − dampening)·d; w −= lr·(buf
	// or d + m·buf): the bound of each is the same with magnitudes.
	bound := func(pre [][]float32) [][]float64 {
		out := make([][]float64, len(args))
		out[0] = make([]float64, w.Len())
		if buf != nil {
			out[2] = make([]float64, w.Len())
		}
		a := func(v float32) float64 { return math.Abs(float64(v)) }
		for i := range out[0] {
			dd := a(pre[1][i]) + a(p.WeightDecay)*a(pre[0][i])
			upd := dd
			if buf != nil {
				b := dd
				if !first {
					b = a(p.Momentum)*a(pre[2][i]) + a(1-p.Dampening)*dd
				}
				out[2][i] = b
				upd = b
				if p.Nesterov {
					upd = dd + a(p.Momentum)*b
				}
			}
			out[0][i] = a(pre[0][i]) + a(p.LR)*upd
		}
		return out
	}
	d.run(launch{op: "SGDStep", args: args, outs: []int{0, 2},
		gpu:   func() { d.Device.SGDStep(w, g, buf, p, first) },
		cpu:   func(c []*tensor.Tensor) { tensor.SGDStep(d.cpu, c[0], c[1], c[2], p, first) },
		bound: bound})
}
