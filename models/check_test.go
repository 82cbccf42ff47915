package models

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pipecast/pipecast/tensor"
)

// randomizeParams gives l's parameters values uniform in [−1, 1) and its
// running statistics plausible ones (means in [−0.5, 0.5), variances in
// [0.5, 1.5)), so that no gradient is tested only at torch's special
// initial values (γ = 1, β = 0).
func randomizeParams(dev tensor.Device, l Layer, rng *rand.Rand) {
	for _, p := range Params(l) {
		Uniform(dev, p.Param.Value, -1, 1, rng)
	}
	for _, b := range Buffers(l) {
		switch b.Buffer.Name {
		case "running_mean":
			Uniform(dev, b.Buffer.Value, -0.5, 0.5, rng)
		case "running_var":
			Uniform(dev, b.Buffer.Value, 0.5, 1.5, rng)
		}
	}
}

// checkLayer runs l forward and backward on a random input of shape in
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
func checkLayer(t *testing.T, dev tensor.Device, l Layer, pass Pass, in tensor.Shape, rng *rand.Rand, rtol, atol float64) {
	t.Helper()
	checkLayerSampled(t, dev, l, pass, in, rng, rtol, atol, 0)
}

// checkLayerSampled is checkLayer with the reference model's central
// differences taken at samples coordinates of the input and samples
// parameter tensors (0: every coordinate). Each difference costs two
// float64 forwards, so whole networks need sampling: a full check of a
// tiny Inception-v3 would take minutes.
func checkLayerSampled(t *testing.T, dev tensor.Device, l Layer, pass Pass, in tensor.Shape, rng *rand.Rand, rtol, atol float64, samples int) {
	t.Helper()
	pass.Dev, pass.Grad = dev, true
	ref := newRefModel(pass, l)
	x, xv := uploadRand(dev, tensor.Boundary, rng, in...)
	defer x.Release()
	wantShape, err := l.OutShape(in)
	if err != nil {
		t.Fatalf("OutShape(%v): %v", in, err)
	}
	dy, dyv := uploadRand(dev, tensor.Boundary, rng, wantShape...)
	defer dy.Release()

	p := pass
	y, ctx := l.Forward(&p, x)
	ry := ref.forward(refTensor{in.Clone(), xv})
	if !y.Shape().Equal(wantShape) || !y.Shape().Equal(ry.shape) {
		t.Fatalf("forward: got shape %v, want %v (OutShape) and %v (reference)", y.Shape(), wantShape, ry.shape)
	}
	compare(t, "y", host(y), ry.v, rtol, atol)
	checkLive(t, dev, "workspace after forward", tensor.Workspace, 0)
	checkBuffers(t, l, ref)

	dx := l.Backward(&p, ctx, dy)
	rdx := ref.backward(refTensor{wantShape, dyv})
	if !dx.Shape().Equal(in) {
		t.Fatalf("backward: got dx of shape %v, want %v", dx.Shape(), in)
	}
	want := map[*Param][]float64{}
	floor := maxAbs(rdx.v)
	for _, np := range Params(l) {
		want[np.Param] = append([]float64(nil), ref.grads[np.Param]...)
		floor = max(floor, maxAbs(want[np.Param]))
	}
	compareScaled(t, "dx", host(dx), rdx.v, rtol, atol, floor)
	for _, np := range Params(l) {
		if np.Param.Grad == nil {
			t.Errorf("%s: no gradient after backward", np.Name)
			continue
		}
		compareScaled(t, "gradient of "+np.Name, host(np.Param.Grad), want[np.Param], rtol, atol, floor)
	}
	equalValues(t, "x after forward and backward", host(x), xv)
	equalValues(t, "dy after backward", host(dy), dyv)
	y.Release()
	dx.Release()
	checkLive(t, dev, "activations after forward and backward", tensor.Activations, 0)
	checkLive(t, dev, "workspace after backward", tensor.Workspace, 0)

	// Gradients accumulate over a second forward and backward.
	y, ctx = l.Forward(&p, x)
	dx = l.Backward(&p, ctx, dy)
	y.Release()
	dx.Release()
	for _, np := range Params(l) {
		if np.Param.Grad != nil {
			compareScaled(t, "gradient of "+np.Name+" after two backwards", host(np.Param.Grad),
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
	checkLive(t, dev, "activations after a forward without Grad", tensor.Activations, wantLive)
	checkLive(t, dev, "workspace after a forward without Grad", tensor.Workspace, 0)
	y.Release()
	checkLive(t, dev, "activations after releasing y", tensor.Activations, 0)

	if samples == 0 {
		checkReferenceGradients(t, pass, l, refTensor{in.Clone(), xv}, dyv, rdx.v, want, floor)
	} else {
		checkReferenceGradientsSampled(t, pass, l, refTensor{in.Clone(), xv}, dyv, rdx.v, want, floor, rng, samples)
	}
}

// checkReferenceGradientsSampled checks the reference model's dx and
// parameter gradients against central differences of its forward at
// sampled coordinates: the largest gradient of samples parameter tensors
// chosen at random, and the largest dx in each of samples stretches of the
// input.
func checkReferenceGradientsSampled(t *testing.T, pass Pass, l Layer, x refTensor, dy, dx []float64, grads map[*Param][]float64, floor float64, rng *rand.Rand, samples int) {
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
	params := Params(l)
	for _, k := range rng.Perm(len(params))[:min(samples, len(params))] {
		np := params[k]
		g := grads[np.Param]
		check("gradient of "+np.Name, ref.values[np.Param], g, argMaxAbs(g))
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
func checkBuffers(t *testing.T, l Layer, ref *refModel) {
	t.Helper()
	for _, nb := range Buffers(l) {
		if b := nb.Buffer; b.Value != nil {
			compare(t, nb.Name, host(b.Value), ref.bufs[b], layerRTol, layerATol)
		} else if got, want := *b.Count, ref.counts[b]; got != want {
			t.Errorf("%s: got %d, want %d", nb.Name, got, want)
		}
	}
}

// checkReferenceGradients checks a fresh reference model of l against
// central differences of its own forward: f = ⟨y(x, θ), dy⟩, whose
// gradients with respect to x and to each parameter are dx and the
// parameter gradients. floor is the largest gradient element, the scale
// of the absolute tolerance (see compareScaled).
func checkReferenceGradients(t *testing.T, pass Pass, l Layer, x refTensor, dy, dx []float64, grads map[*Param][]float64, floor float64) {
	t.Helper()
	ref := newRefModel(pass, l)
	f := func() float64 { return dot(ref.forward(x).v, dy) }
	compareScaled(t, "reference dx against central differences", dx, numericGrad(f, x.v, fdStep), 0, fdTol, floor)
	for _, np := range Params(l) {
		compareScaled(t, "reference gradient of "+np.Name+" against central differences",
			grads[np.Param], numericGrad(f, ref.values[np.Param], fdStep), 0, fdTol, floor)
	}
}

// maxAbs returns the largest magnitude in v.
func maxAbs(v []float64) float64 {
	m := 0.0
	for _, e := range v {
		m = max(m, math.Abs(e))
	}
	return m
}
