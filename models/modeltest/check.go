package modeltest

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/tensor"
)

// RandomizeParams gives l's parameters values uniform in [−1, 1) and its
// running statistics plausible ones (means in [−0.5, 0.5), variances in
// [0.5, 1.5)), so that no gradient is tested only at torch's special
// initial values (γ = 1, β = 0).
func RandomizeParams(dev tensor.Device, l models.Layer, rng *rand.Rand) {
	for _, p := range models.Params(l) {
		models.Uniform(dev, p.Param.Value, -1, 1, rng)
	}
	for _, b := range models.Buffers(l) {
		switch b.Buffer.Name {
		case "running_mean":
			models.Uniform(dev, b.Buffer.Value, -0.5, 0.5, rng)
		case "running_var":
			models.Uniform(dev, b.Buffer.Value, 0.5, 1.5, rng)
		}
	}
}

// CheckLayer runs l forward and backward on a random input of shape in
// under pass (its Dev and Grad are set here) and checks, against the
// float64 reference model of l:
//   - y, dx and every parameter gradient, within rtol and atol;
//   - the running statistics and num_batches_tracked after the forward;
//   - that x and dy are left unchanged (they are only borrowed);
//   - that nothing stays in Activations or Workspace once y and dx are
//     released;
//   - that a second forward and backward doubles the parameter gradients
//     (they accumulate);
//   - that a forward without Grad returns no context and leaves only y
//     in Activations;
//   - and the reference model itself: its backward against central
//     differences of its forward.
//
// l must have no gradients allocated yet.
func CheckLayer(t testing.TB, dev tensor.Device, l models.Layer, pass models.Pass, in tensor.Shape, rng *rand.Rand, rtol, atol float64) {
	t.Helper()
	CheckLayerSampled(t, dev, l, pass, in, rng, rtol, atol, 0)
}

// CheckLayerSampled is CheckLayer with the reference model's central
// differences taken at samples coordinates of the input and samples
// parameter tensors (0: every coordinate). Each difference costs two
// float64 forwards, so whole networks need sampling: a full check of a
// tiny Inception-v3 would take minutes.
func CheckLayerSampled(t testing.TB, dev tensor.Device, l models.Layer, pass models.Pass, in tensor.Shape, rng *rand.Rand, rtol, atol float64, samples int) {
	t.Helper()
	checkLayer(t, dev, l, pass, in, 0, rng, rtol, atol, samples)
}

// CheckTokenLayer is CheckLayer for a layer whose input is token ids
// below vocab (an embedding, or a block that starts with one): x holds
// random whole numbers, the layer must return no input gradient, and the
// reference's central differences are taken in the parameters alone.
func CheckTokenLayer(t testing.TB, dev tensor.Device, l models.Layer, pass models.Pass, in tensor.Shape, vocab int, rng *rand.Rand, rtol, atol float64) {
	t.Helper()
	if vocab < 1 {
		t.Fatalf("CheckTokenLayer: vocabulary %d", vocab)
	}
	checkLayer(t, dev, l, pass, in, vocab, rng, rtol, atol, 0)
}

// checkLayer is CheckLayerSampled on an input of token ids below vocab,
// or of values in [−1, 1) when vocab is 0.
func checkLayer(t testing.TB, dev tensor.Device, l models.Layer, pass models.Pass, in tensor.Shape, vocab int, rng *rand.Rand, rtol, atol float64, samples int) {
	t.Helper()
	pass.Dev, pass.Grad = dev, true
	ref := newRefModel(pass, l)
	var x *tensor.Tensor
	var xv []float64
	if vocab > 0 {
		x, xv = UploadTokens(dev, tensor.Boundary, rng, vocab, in...)
	} else {
		x, xv = UploadRand(dev, tensor.Boundary, rng, in...)
	}
	defer x.Release()
	wantShape, err := l.OutShape(in)
	if err != nil {
		t.Fatalf("OutShape(%v): %v", in, err)
	}
	dy, dyv := UploadRand(dev, tensor.Boundary, rng, wantShape...)
	defer dy.Release()

	p := pass
	y, ctx := l.Forward(&p, x)
	ry := ref.forward(refTensor{in.Clone(), xv})
	if !y.Shape().Equal(wantShape) || !y.Shape().Equal(ry.shape) {
		t.Fatalf("forward: got shape %v, want %v (OutShape) and %v (reference)", y.Shape(), wantShape, ry.shape)
	}
	Compare(t, "y", Host(y), ry.v, rtol, atol)
	CheckLive(t, dev, "workspace after forward", tensor.Workspace, 0)
	checkBuffers(t, l, ref)

	dx := l.Backward(&p, ctx, dy)
	rdx := ref.backward(refTensor{wantShape, dyv})
	switch {
	case vocab > 0 && dx != nil:
		t.Fatalf("backward: got dx of shape %v for token ids, want none", dx.Shape())
	case vocab == 0 && dx == nil:
		t.Fatalf("backward: got no dx, want one of shape %v", in)
	case vocab == 0 && !dx.Shape().Equal(in):
		t.Fatalf("backward: got dx of shape %v, want %v", dx.Shape(), in)
	}
	want := map[*models.Param][]float64{}
	floor := MaxAbs(rdx.v)
	for _, np := range models.Params(l) {
		want[np.Param] = append([]float64(nil), ref.grads[np.Param]...)
		floor = max(floor, MaxAbs(want[np.Param]))
	}
	if vocab == 0 {
		CompareScaled(t, "dx", Host(dx), rdx.v, rtol, atol, floor)
	}
	for _, np := range models.Params(l) {
		if np.Param.Grad == nil {
			t.Errorf("%s: no gradient after backward", np.Name)
			continue
		}
		CompareScaled(t, "gradient of "+np.Name, Host(np.Param.Grad), want[np.Param], rtol, atol, floor)
	}
	EqualValues(t, "x after forward and backward", Host(x), xv)
	EqualValues(t, "dy after backward", Host(dy), dyv)
	y.Release()
	dx.Release()
	CheckLive(t, dev, "activations after forward and backward", tensor.Activations, 0)
	CheckLive(t, dev, "workspace after backward", tensor.Workspace, 0)

	// Gradients accumulate over a second forward and backward.
	y, ctx = l.Forward(&p, x)
	dx = l.Backward(&p, ctx, dy)
	y.Release()
	dx.Release()
	for _, np := range models.Params(l) {
		if np.Param.Grad != nil {
			CompareScaled(t, "gradient of "+np.Name+" after two backwards", Host(np.Param.Grad),
				reference2x(want[np.Param]), rtol, atol, 2*floor)
		}
	}

	// Without Grad, a forward keeps nothing: only y is live.
	p.Grad = false
	y, ctx = l.Forward(&p, x)
	if ctx != nil {
		t.Errorf("forward without Grad: got a context %T, want nil", ctx)
		ctx.Release()
	}
	wantLive := y.Bytes()
	if y.Storage() == x.Storage() {
		wantLive = 0 // y is a view of x
	}
	CheckLive(t, dev, "activations after a forward without Grad", tensor.Activations, wantLive)
	CheckLive(t, dev, "workspace after a forward without Grad", tensor.Workspace, 0)
	y.Release()
	CheckLive(t, dev, "activations after releasing y", tensor.Activations, 0)

	if samples == 0 {
		checkReferenceGradients(t, pass, l, refTensor{in.Clone(), xv}, dyv, rdx.v, want, floor, vocab > 0)
	} else {
		checkReferenceGradientsSampled(t, pass, l, refTensor{in.Clone(), xv}, dyv, rdx.v, want, floor, rng, samples, vocab > 0)
	}
}

// checkReferenceGradientsSampled checks the reference model's dx and
// parameter gradients against central differences of its forward at
// sampled coordinates: the largest gradient of samples parameter tensors
// chosen at random, and, unless x holds token ids, the largest dx in
// each of samples stretches of the input.
func checkReferenceGradientsSampled(t testing.TB, pass models.Pass, l models.Layer, x refTensor, dy, dx []float64, grads map[*models.Param][]float64, floor float64, rng *rand.Rand, samples int, ids bool) {
	t.Helper()
	ref := newRefModel(pass, l)
	xv := append([]float64(nil), x.v...)
	xr := refTensor{x.shape, xv}
	f := func() float64 { return dot(ref.forward(xr).v, dy) }
	check := func(what string, v, grad []float64, i int) {
		old := v[i]
		v[i] = old + fdStep
		fp := f()
		v[i] = old - fdStep
		fm := f()
		v[i] = old
		if fd := (fp - fm) / (2 * fdStep); math.Abs(fd-grad[i]) > fdTol*floor {
			t.Errorf("reference %s[%d] against central differences: got %v, want %v (tolerance %.3g)",
				what, i, grad[i], fd, fdTol*floor)
		}
	}
	params := models.Params(l)
	for _, k := range rng.Perm(len(params))[:min(samples, len(params))] {
		np := params[k]
		g := grads[np.Param]
		check("gradient of "+np.Name, ref.values[np.Param], g, argMaxAbs(g))
	}
	if ids {
		return
	}
	stretch := max(1, len(xv)/samples)
	for lo := 0; lo+stretch <= len(xv); lo += stretch {
		check("dx", xv, dx, lo+argMaxAbs(dx[lo:lo+stretch]))
	}
}

// argMaxAbs returns the index of v's largest magnitude.
func argMaxAbs(v []float64) int {
	at := 0
	for i, e := range v {
		if math.Abs(e) > math.Abs(v[at]) {
			at = i
		}
	}
	return at
}

// reference2x returns the gradients two backwards accumulate.
func reference2x(g []float64) []float64 {
	out := make([]float64, len(g))
	for i, v := range g {
		out[i] = 2 * v
	}
	return out
}

// checkBuffers compares l's running statistics and counters with the
// reference model's after the same forwards. The running statistics are
// a blend of float32 batch statistics, held to the layer tolerance.
func checkBuffers(t testing.TB, l models.Layer, ref *refModel) {
	t.Helper()
	for _, nb := range models.Buffers(l) {
		if b := nb.Buffer; b.Value != nil {
			Compare(t, nb.Name, Host(b.Value), ref.bufs[b], LayerRTol, LayerATol)
		} else if got, want := *b.Count, ref.counts[b]; got != want {
			t.Errorf("%s: got %d, want %d", nb.Name, got, want)
		}
	}
}

// checkReferenceGradients checks a fresh reference model of l against
// central differences of its own forward: f = ⟨y(x, θ), dy⟩, whose
// gradients with respect to x (unless x holds token ids) and to each
// parameter are dx and the parameter gradients. floor is the largest gradient element, the scale
// of the absolute tolerance (see CompareScaled).
func checkReferenceGradients(t testing.TB, pass models.Pass, l models.Layer, x refTensor, dy, dx []float64, grads map[*models.Param][]float64, floor float64, ids bool) {
	t.Helper()
	ref := newRefModel(pass, l)
	f := func() float64 { return dot(ref.forward(x).v, dy) }
	if !ids { // token ids are not differentiable
		CompareScaled(t, "reference dx against central differences", dx, numericGrad(f, x.v, fdStep), 0, fdTol, floor)
	}
	for _, np := range models.Params(l) {
		CompareScaled(t, "reference gradient of "+np.Name+" against central differences",
			grads[np.Param], numericGrad(f, ref.values[np.Param], fdStep), 0, fdTol, floor)
	}
}

// RandomizeBatchNorm moves every batch norm's γ into [0.5, 1.5) and β
// into [−0.5, 0.5), away from torch's initial 1 and 0, at which an error
// in their gradients, or one they multiply, could hide.
func RandomizeBatchNorm(dev tensor.Device, l models.Layer, rng *rand.Rand) {
	models.Walk(l, func(_ string, l models.Layer) {
		if bn, ok := l.(*models.BatchNorm2D); ok {
			models.Uniform(dev, bn.Weight.Value, 0.5, 1.5, rng)
			models.Uniform(dev, bn.Bias.Value, -0.5, 0.5, rng)
		}
	})
}
