package modeltest

import (
	"testing"

	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/tensor"
)

// testGradients checks the whole network with CheckLayer — output, dx,
// every gradient, running statistics, memory, and the reference against
// central differences — and, as c.Grad asks, that the gradients are
// alive and every block on its own. A language model is checked as
// CheckTokenLayer checks a layer: on token ids, without dx.
func testGradients(t *testing.T, c *Case) {
	g := c.Grad
	samples := g.Samples
	if testing.Short() {
		if g.Slow {
			t.Skip("central differences of the whole model take seconds")
		}
		if g.ShortSamples != 0 {
			samples = g.ShortSamples
		}
	}
	randomize := g.Randomize
	if randomize == nil {
		randomize = RandomizeParams
	}
	dev := NewDevice(t)
	rng := NewRand(seed(g.Seed, 51))
	cfg := or(g.Config, c.Config)
	m, err := models.Build(dev, c.Model, cfg, rng)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		m.Release()
		CheckNoLeak(t, dev)
	}()
	randomize(dev, m.Net, rng)
	in := append(tensor.Shape{c.batch()}, m.Input...)
	checkLayer(t, dev, m.Net, g.Pass, in, inputVocab(m), rng, BlockRTol, BlockATol, samples)
	if g.Alive != 0 {
		checkAlive(t, m.Net, g.Alive)
	}
	if g.BlockImage == 0 {
		return
	}
	// A fresh model: CheckLayer wants one without gradients.
	blocks, err := models.Build(dev, c.Model, cfg, rng)
	if err != nil {
		t.Fatal(err)
	}
	defer blocks.Release()
	randomize(dev, blocks.Net, rng)
	for i, bl := range blocks.Blocks {
		t.Run(bl.Name, func(t *testing.T) {
			in := append(tensor.Shape{c.batch()}, bl.In...)
			if len(bl.In) == 3 {
				in = tensor.Shape{c.batch(), bl.In[0], g.BlockImage, g.BlockImage}
			}
			vocab := 0
			if i == 0 {
				vocab = inputVocab(blocks) // the first block takes the model's input
			}
			// A tied parameter (GPT-2's wte and lm_head) has the
			// gradient of an earlier block's check.
			for _, np := range models.Params(bl.Layer) {
				np.Param.Grad.Release()
				np.Param.Grad = nil
			}
			pass := models.Pass{Train: true, Seed: 5, Step: uint64(i)}
			checkLayer(t, dev, bl.Layer, pass, in, vocab, rng, BlockRTol, BlockATol, g.BlockSamples)
		})
	}
}

// checkAlive fails the test unless each parameter's largest gradient
// element is at least frac of the model's largest, biases that batch
// norm cancels excepted: the check is only as good as the gradients are
// alive.
func checkAlive(t *testing.T, l models.Layer, frac float64) {
	t.Helper()
	cancelled := biasesBeforeBatchNorm(l)
	largest := 0.0
	grads := map[string]float64{}
	for _, np := range models.Params(l) {
		grads[np.Name] = MaxAbs(Host(np.Param.Grad))
		largest = max(largest, grads[np.Name])
	}
	for _, np := range models.Params(l) {
		if !cancelled[np.Param] && grads[np.Name] < frac*largest {
			t.Errorf("%s: largest gradient element %.3g, under %g of the model's largest, %.3g", np.Name, grads[np.Name], frac, largest)
		}
	}
}
