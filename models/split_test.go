package models

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pipecast/pipecast/tensor"
)

// splitCase is a layer whose split backward is checked against Backward:
// build, from a generator with a fixed seed, makes identical copies.
type splitCase struct {
	name  string
	build func(tensor.Device, *rand.Rand) Layer
	in    tensor.Shape // the input of one micro-batch
	pass  Pass
	// randomize draws parameters and running statistics uniformly, as
	// the layer tests do; the zoo keeps torchvision's initialisation,
	// under which deep networks stay in range.
	randomize bool
	// vocab > 0: the input is token ids below it (an embedding's).
	vocab int
}

// input uploads a random input of one micro-batch: values in [−1, 1),
// or token ids.
func (tc splitCase) input(dev tensor.Device, rng *rand.Rand) *tensor.Tensor {
	if tc.vocab > 0 {
		ids := make([]float32, tc.in.Numel())
		for i := range ids {
			ids[i] = float32(rng.IntN(tc.vocab))
		}
		return tensor.FromHost(dev, tensor.Boundary, tc.in, ids)
	}
	x, _ := uploadRand(dev, tensor.Boundary, rng, tc.in...)
	return x
}

// splitLayerCases covers every layer kind: the leaves that split, the
// ones that defer nothing, and every container around both.
func splitLayerCases() []splitCase {
	train := Pass{Train: true, Seed: 7, Step: 2}
	leaf := func(l func(tensor.Device, *rand.Rand) Layer, in tensor.Shape, p Pass) splitCase {
		return splitCase{build: l, in: in, pass: p, randomize: true}
	}
	fixed := func(l Layer) func(tensor.Device, *rand.Rand) Layer {
		return func(tensor.Device, *rand.Rand) Layer { return l }
	}
	pool := tensor.Pool2DParams{KH: 3, KW: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1}
	cases := map[string]splitCase{
		"linear with bias": leaf(func(dev tensor.Device, rng *rand.Rand) Layer {
			return NewLinear(dev, 7, 5, true, rng)
		}, tensor.Shape{3, 7}, train),
		"linear without bias": leaf(func(dev tensor.Device, rng *rand.Rand) Layer {
			return NewLinear(dev, 6, 3, false, rng)
		}, tensor.Shape{2, 6}, train),
		"conv2d with bias": leaf(func(dev tensor.Device, rng *rand.Rand) Layer {
			return NewConv2D(dev, Conv2DConfig{In: 3, Out: 4, KH: 3, KW: 3, StrideH: 1, StrideW: 1, PadH: 1, PadW: 1, Bias: true}, rng)
		}, tensor.Shape{2, 3, 7, 5}, train),
		"conv2d strided without bias": leaf(func(dev tensor.Device, rng *rand.Rand) Layer {
			return convNoBias(dev, rng, 3, 5, 3, 2, 2, 1, 0)
		}, tensor.Shape{3, 3, 9, 5}, train),
		"batchnorm train": leaf(func(dev tensor.Device, _ *rand.Rand) Layer {
			return NewBatchNorm2D(dev, 3, tensor.DefaultBatchNorm())
		}, tensor.Shape{3, 3, 5, 4}, train),
		"batchnorm eval": leaf(func(dev tensor.Device, _ *rand.Rand) Layer {
			return NewBatchNorm2D(dev, 3, tensor.DefaultBatchNorm())
		}, tensor.Shape{2, 3, 5, 4}, Pass{}),
		"relu":                 leaf(fixed(NewReLU()), tensor.Shape{2, 3, 4, 5}, train),
		"maxpool":              leaf(fixed(NewMaxPool2D(pool)), tensor.Shape{2, 2, 7, 9}, train),
		"avgpool":              leaf(fixed(NewAvgPool2D(pool)), tensor.Shape{2, 2, 7, 9}, train),
		"adaptive avgpool":     leaf(fixed(NewAdaptiveAvgPool2D(3, 2)), tensor.Shape{2, 2, 7, 5}, train),
		"flatten":              leaf(fixed(NewFlatten()), tensor.Shape{2, 2, 3, 5}, train),
		"dropout":              leaf(fixed(NewDropout(0.5, 4)), tensor.Shape{3, 11}, train),
		"empty sequential":     leaf(fixed(Seq()), tensor.Shape{2, 3}, train),
		"sequential":           leaf(smallSequential, tensor.Shape{3, 3, 7, 7}, train),
		"sequential eval":      leaf(smallSequential, tensor.Shape{2, 3, 7, 7}, Pass{}),
		"concat (inceptionE)":  leaf(smallInceptionE, tensor.Shape{2, 4, 5, 5}, train),
		"residual bottleneck":  leaf(func(dev tensor.Device, rng *rand.Rand) Layer { return smallBottleneck(dev, rng, 6, 3, 8) }, tensor.Shape{2, 6, 7, 5}, train),
		"residual basic block": leaf(func(dev tensor.Device, rng *rand.Rand) Layer { return smallBasicBlock(dev, rng, 3) }, tensor.Shape{2, 3, 5, 5}, train),
		// The main path ends in a convolution whose work retains the
		// borrowed dy, and in a saved relu; neither sum may be in place.
		"residual ending in a conv": leaf(func(dev tensor.Device, rng *rand.Rand) Layer {
			return NewResidual(Child{"", Seq(NewReLU(), convNoBias(dev, rng, 3, 3, 3, 3, 1, 1, 1))}, Child{}, nil)
		}, tensor.Shape{2, 3, 4, 5}, train),
		"residual ending in a relu": leaf(func(dev tensor.Device, rng *rand.Rand) Layer {
			return NewResidual(Child{"", Seq(NewLinear(dev, 5, 5, true, rng), NewReLU())}, Child{"downsample", NewLinear(dev, 5, 5, false, rng)}, nil)
		}, tensor.Shape{3, 5}, train),
	}
	return sortedCases(cases)
}

// splitZooCases are the zoo's networks at small widths and images.
func splitZooCases() []splitCase {
	train := Pass{Train: true, Seed: 3, Step: 1}
	zoo := func(name string, cfg Config) func(tensor.Device, *rand.Rand) Layer {
		return func(dev tensor.Device, rng *rand.Rand) Layer {
			m, err := Build(dev, name, cfg, rng)
			if err != nil {
				panic(fmt.Sprintf("build %s: %v", name, err))
			}
			return m.Net
		}
	}
	return []splitCase{
		{name: "mlp", build: zoo("mlp", Config{Sizes: []int{10, 8, 6, 4}}), in: tensor.Shape{3, 10}, pass: train},
		{name: "vgg16", build: zoo("vgg16", Config{Width: 1.0 / 32, Image: 32, Classes: 3}), in: tensor.Shape{2, 3, 32, 32}, pass: train},
		{name: "vgg16bn", build: zoo("vgg16bn", Config{Width: 1.0 / 32, Image: 32, Classes: 3}), in: tensor.Shape{2, 3, 32, 32}, pass: train},
		{name: "resnet50", build: zoo("resnet50", Config{Width: 1.0 / 64, Image: 16, Classes: 3}), in: tensor.Shape{2, 3, 16, 16}, pass: train},
		{name: "inceptionv3", build: zoo("inceptionv3", Config{Width: 1.0 / 32, Image: 75, Classes: 3}), in: tensor.Shape{2, 3, 75, 75}, pass: train},
	}
}

func sortedCases(m map[string]splitCase) []splitCase {
	var out []splitCase
	for name, c := range m {
		c.name = name
		out = append(out, c)
	}
	for i := range out { // insertion sort by name: a stable test order
		for j := i; j > 0 && out[j].name < out[j-1].name; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// TestSplitBackwardLayers checks BackwardInput and Run against Backward
// for every layer kind.
func TestSplitBackwardLayers(t *testing.T) {
	runSplitCases(t, splitLayerCases())
}

// TestSplitBackwardZoo checks BackwardInput and Run against Backward for
// every network of the zoo.
func TestSplitBackwardZoo(t *testing.T) {
	runSplitCases(t, splitZooCases())
}

func runSplitCases(t *testing.T, cases []splitCase) {
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			seed := uint64(300 + i)
			t.Run("one micro-batch", func(t *testing.T) { checkSplitEqual(t, tc, seed, 1) })
			t.Run("two micro-batches, works deferred", func(t *testing.T) { checkSplitEqual(t, tc, seed, 2) })
			t.Run("memory after run", func(t *testing.T) { checkSplitMemory(t, tc, seed, true) })
			t.Run("memory after release", func(t *testing.T) { checkSplitMemory(t, tc, seed, false) })
		})
	}
}

// buildSplit builds tc's layer on dev from seed.
func buildSplit(dev tensor.Device, tc splitCase, seed uint64) Layer {
	rng := newRand(seed)
	l := tc.build(dev, rng)
	if tc.randomize {
		randomizeParams(dev, l, rng)
	}
	return l
}

// defersWork reports whether l has a layer whose parameter gradients
// BackwardInput defers: a linear layer or a convolution.
func defersWork(l Layer) bool {
	found := false
	Walk(l, func(_ string, l Layer) {
		if _, ok := l.(paramsKernel); ok {
			found = true
		}
	})
	return found
}

// checkSplitEqual forwards micro micro-batches through two copies of
// tc's layer, then backpropagates them in the same order: Backward on
// one; BackwardInput of every micro-batch and then their works in order
// on the other. Input gradients and parameter gradients must be equal
// bit for bit: the same kernels run on the same operands, and each
// gradient accumulates the micro-batches in the same order.
func checkSplitEqual(t *testing.T, tc splitCase, seed uint64, micro int) {
	dev := newDevice(t)
	a, b := buildSplit(dev, tc, seed), buildSplit(dev, tc, seed)
	rng := newRand(seed + 1000)
	p := tc.pass
	p.Dev, p.Grad = dev, true
	var xs, dys []*tensor.Tensor
	var ctxA, ctxB []Context
	for m := range micro {
		p.Sample = m * tc.in[0]
		x := tc.input(dev, rng)
		ya, ca := a.Forward(&p, x)
		yb, cb := b.Forward(&p, x)
		dy, _ := uploadRand(dev, tensor.Boundary, rng, ya.Shape()...)
		ya.Release()
		yb.Release()
		xs, dys = append(xs, x), append(dys, dy)
		ctxA, ctxB = append(ctxA, ca), append(ctxB, cb)
	}
	var works []WeightGrad
	for m := range micro {
		p.Sample = m * tc.in[0]
		dxa := a.Backward(&p, ctxA[m], dys[m])
		dxb, w := BackwardInput(b, &p, ctxB[m], dys[m])
		if got, want := w != nil, defersWork(b); got != want {
			t.Errorf("micro-batch %d: BackwardInput returned work %v, want %v", m, got, want)
		}
		switch {
		case dxa == nil && dxb == nil: // token ids have no gradient
		case dxa == nil || dxb == nil:
			t.Errorf("micro-batch %d: dx %v from Backward, %v from the split", m, dxa != nil, dxb != nil)
		default:
			equalBits(t, fmt.Sprintf("dx of micro-batch %d", m), dxb, dxa)
		}
		dxa.Release()
		dxb.Release()
		works = append(works, w)
	}
	for m, w := range works {
		if w != nil {
			p.Sample = m * tc.in[0]
			w.Run(&p)
		}
	}
	pa, pb := Params(a), Params(b)
	for i := range pa {
		ga, gb := pa[i].Param.Grad, pb[i].Param.Grad
		if ga == nil || gb == nil {
			t.Errorf("%s: gradient allocated by Backward %v, by the split %v", pa[i].Name, ga != nil, gb != nil)
			continue
		}
		equalBits(t, pa[i].Name+" gradient", gb, ga)
	}
	for i := range xs {
		xs[i].Release()
		dys[i].Release()
	}
	ReleaseLayer(a)
	ReleaseLayer(b)
	checkNoLeak(t, dev)
}

// checkSplitMemory checks that a work keeps what it needs after the
// caller has released its own references, and that running it (run) or
// releasing it leaves the device as it was before the forward. Released,
// it must not have touched the gradients it defers.
func checkSplitMemory(t *testing.T, tc splitCase, seed uint64, run bool) {
	dev := newDevice(t)
	l := buildSplit(dev, tc, seed)
	for _, np := range Params(l) {
		np.Param.GradFor(dev)
	}
	base := dev.Memory().LiveTotalBytes
	rng := newRand(seed + 2000)
	p := tc.pass
	p.Dev, p.Grad = dev, true
	x := tc.input(dev, rng)
	y, ctx := l.Forward(&p, x)
	dy, _ := uploadRand(dev, tensor.Boundary, rng, y.Shape()...)
	y.Release()
	dx, w := BackwardInput(l, &p, ctx, dy)
	x.Release() // the work holds its own references
	dy.Release()
	dx.Release()
	if w == nil {
		checkLive(t, dev, "live bytes after a backward that defers nothing", tensor.Activations, 0)
	} else {
		if held := dev.Memory().LiveTotalBytes - base; held <= 0 {
			t.Errorf("work pending: %d bytes live beyond the model, want the inputs and gradients it keeps", held)
		}
		if run {
			w.Run(&p)
			mustPanic(t, "a second Run", "run after", func() { w.Run(&p) })
		} else {
			w.Release()
		}
	}
	if got := dev.Memory().LiveTotalBytes; got != base {
		t.Errorf("%d bytes live after the backward, want %d as before the forward (by category %v)",
			got, base, dev.Memory().LiveBytes)
	}
	if !run {
		checkDeferredGradsZero(t, l)
	}
	ReleaseLayer(l)
	checkNoLeak(t, dev)
}

// checkDeferredGradsZero fails the test unless every gradient that
// BackwardInput defers is still zero.
func checkDeferredGradsZero(t *testing.T, l Layer) {
	t.Helper()
	Walk(l, func(path string, l Layer) {
		if _, ok := l.(paramsKernel); !ok {
			return
		}
		for _, p := range l.Params() {
			if m := maxAbs(host(p.Grad)); m != 0 {
				t.Errorf("%s.%s: gradient %v after the work was released, want 0", path, p.Name, m)
			}
		}
	})
}

// equalBits fails the test unless got and want hold the same float32
// bits, element for element.
func equalBits(t *testing.T, what string, got, want *tensor.Tensor) {
	t.Helper()
	if !got.Shape().Equal(want.Shape()) {
		t.Errorf("%s: shape %v, want %v", what, got.Shape(), want.Shape())
		return
	}
	g, w := tensor.ToHost(got), tensor.ToHost(want)
	for i := range g {
		if math.IsNaN(float64(w[i])) || math.IsInf(float64(w[i]), 0) {
			t.Errorf("%s[%d]: reference %v is not finite", what, i, w[i])
			return
		}
		if math.Float32bits(g[i]) != math.Float32bits(w[i]) {
			t.Errorf("%s[%d]: got %v, want %v (bits %#x, %#x)", what, i, g[i], w[i], math.Float32bits(g[i]), math.Float32bits(w[i]))
			return
		}
	}
}
