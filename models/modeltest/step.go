package modeltest

import (
	"math"
	"testing"

	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/tensor"
)

// testTrainStep runs a training forward, the mean cross entropy and the
// backward of the model on the CPU device and of its float64 mirror, and
// compares the logits, the loss, the running statistics, dx (a language
// model has none: its input is token ids) and every parameter gradient;
// it also checks that every gradient is there, finite and, but for
// biases that batch norm cancels, nonzero, and that the step leaves
// nothing live but the model. A language model's loss is the mean over
// every position of every sequence, as Hugging Face's models take it.
func testTrainStep(t *testing.T, c *Case) {
	s := c.Step
	outTol, gradTol := s.OutTol, s.GradTol
	if outTol == 0 {
		outTol = StepOutTol
	}
	if gradTol == 0 {
		gradTol = StepGradTol
	}
	dev := NewDevice(t)
	rng := NewRand(seed(s.Seed, 52))
	m, err := models.Build(dev, c.Model, or(s.Config, c.Config), rng)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		m.Release()
		CheckNoLeak(t, dev)
	}()
	if s.Randomize != nil {
		s.Randomize(dev, m.Net, rng)
	}
	batch, classes := c.batch(), m.Config.Classes
	in, out := append(tensor.Shape{batch}, m.Input...), logitsShape(m, batch)
	x, xv := uploadInput(dev, rng, m, batch)
	defer x.Release()
	labels := drawLabels(rng, m, batch)
	rows := len(labels) // the positions the loss averages over

	// Dropout on, with a key other than the zero one.
	p := &models.Pass{Dev: dev, Train: true, Grad: true, Seed: 7, Step: 1}
	ref := newRefModel(*p, m.Net)
	y, ctx := m.Net.Forward(p, x)
	if !y.Shape().Equal(out) {
		ctx.Release()
		y.Release()
		t.Fatalf("logits: got shape %v, want %v", y.Shape(), out)
	}
	ry := ref.forward(refTensor{in, xv})
	CompareScaled(t, "logits", Host(y), ry.v, 0, outTol, 0)
	for _, nb := range models.Buffers(m.Net) {
		if b := nb.Buffer; b.Value != nil {
			CompareScaled(t, nb.Name, Host(b.Value), ref.bufs[b], 0, outTol, 1)
		} else if *b.Count != 1 || ref.counts[b] != 1 {
			t.Errorf("%s: got %d (mirror %d), want 1 after one training forward", nb.Name, *b.Count, ref.counts[b])
		}
	}

	loss, dy := models.CrossEntropy(p, y, labels, 1/float32(rows))
	y.Release()
	if math.IsNaN(loss) || math.IsInf(loss, 0) || loss <= 0 {
		t.Errorf("loss: got %v, want a positive finite value", loss)
	}
	if s.LossNear != 0 && math.Abs(loss-math.Log(float64(classes))) > s.LossNear {
		t.Errorf("loss: got %v, want it within %v of log %d = %.3f", loss, s.LossNear, classes, math.Log(float64(classes)))
	}
	CompareScaled(t, "loss", []float64{loss}, []float64{crossEntropy(ry.v, labels) / float64(rows)}, 0, outTol, 1)

	dyv := Host(dy)
	dx := m.Net.Backward(p, ctx, dy)
	dy.Release()
	rdx := ref.backward(refTensor{out, dyv})
	floor := MaxAbs(rdx.v)
	for _, g := range ref.grads {
		floor = max(floor, MaxAbs(g))
	}
	switch {
	case isLanguage(m):
		if dx != nil {
			t.Errorf("dx: got shape %v for token ids, want none", dx.Shape())
		}
	case dx == nil:
		t.Errorf("dx: got none, want shape %v", in)
	case !dx.Shape().Equal(in):
		t.Errorf("dx: got shape %v, want %v", dx.Shape(), in)
	default:
		CompareScaled(t, "dx", Host(dx), rdx.v, 0, gradTol, floor)
	}
	dx.Release()
	CheckLive(t, dev, "activations after the step", tensor.Activations, 0)
	CheckLive(t, dev, "workspace after the step", tensor.Workspace, 0)

	cancelled := biasesBeforeBatchNorm(m.Net)
	for _, np := range models.Params(m.Net) {
		g := np.Param.Grad
		if g == nil || !g.Shape().Equal(np.Param.Value.Shape()) {
			t.Errorf("%s: no gradient of shape %v", np.Name, np.Param.Value.Shape())
			continue
		}
		gv := Host(g)
		CompareScaled(t, "gradient of "+np.Name, gv, ref.grads[np.Param], 0, gradTol, floor)
		largest := MaxAbs(gv)
		if math.IsNaN(largest) || math.IsInf(largest, 0) || (largest == 0 && !cancelled[np.Param]) {
			t.Errorf("%s: gradient's largest magnitude is %v, want finite and nonzero", np.Name, largest)
		}
	}
}

// crossEntropy returns Σ_i −log softmax(logits_i)[labels_i] in float64,
// for logits of len(labels) rows of classes ([B, classes], or a
// language model's [B, S, classes] with a label a position).
func crossEntropy(logits []float64, labels []int32) float64 {
	classes := len(logits) / len(labels)
	sum := 0.0
	for i, c := range labels {
		row := logits[i*classes : (i+1)*classes]
		m := math.Inf(-1)
		for _, v := range row {
			m = max(m, v)
		}
		e := 0.0
		for _, v := range row {
			e += math.Exp(v - m)
		}
		sum += m + math.Log(e) - row[c]
	}
	return sum
}

// biasesBeforeBatchNorm returns the biases of the convolutions whose
// output goes straight into a batch normalisation, following the order
// of Sequential containers (VGG's conv → bn pairs); the branches of
// other containers start chains of their own. Training-mode batch norm
// subtracts the batch mean, so such a bias's gradient is zero up to
// rounding.
func biasesBeforeBatchNorm(l models.Layer) map[*models.Param]bool {
	out := map[*models.Param]bool{}
	var prev models.Layer
	var visit func(l models.Layer)
	visit = func(l models.Layer) {
		if s, ok := l.(*models.Sequential); ok {
			for _, c := range s.Layers {
				visit(c.Layer)
			}
			return
		}
		if _, ok := l.(*models.BatchNorm2D); ok {
			if c, ok := prev.(*models.Conv2D); ok && c.Bias != nil {
				out[c.Bias] = true
			}
		}
		for _, c := range l.Children() {
			prev = nil
			visit(c.Layer)
		}
		prev = l
	}
	visit(l)
	return out
}
