package modeltest

import (
	"math"
	"math/rand/v2"

	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/tensor"
)

// What the suite does differently for a language model, one place for
// each difference: a model is one when its Arch has Tokens (the model
// says so, not the Case; testDescribe checks that the Case agrees).
// Its input is Seq token ids a sample, its labels one a position (the
// next token), its logits [B, S, Vocab] and its loss the mean over the
// B·S positions, as Hugging Face's models and datasets.Tokens have them.

// isLanguage reports whether m is a language model.
func isLanguage(m *models.Model) bool { return m.Arch.Tokens != nil }

// inputVocab returns the bound of m's token ids, or 0 when its input is
// values (images, vectors): checkLayer's vocab.
func inputVocab(m *models.Model) int {
	if isLanguage(m) {
		return m.Config.Vocab
	}
	return 0
}

// uploadInput returns a batch of n samples of m's input on dev, in the
// Boundary category, with its float64 copy: token ids uniform in [0,
// Vocab) for a language model (models.Model.RandomInput's draw), values
// uniform in [−1, 1) otherwise.
func uploadInput(dev tensor.Device, rng *rand.Rand, m *models.Model, n int) (*tensor.Tensor, []float64) {
	shape := append(tensor.Shape{n}, m.Input...)
	if v := inputVocab(m); v > 0 {
		return UploadTokens(dev, tensor.Boundary, rng, v, shape...)
	}
	return UploadRand(dev, tensor.Boundary, rng, shape...)
}

// logitsShape returns the shape of m's output for n samples: [n, S,
// Vocab] for a language model, [n, classes] otherwise.
func logitsShape(m *models.Model, n int) tensor.Shape {
	if isLanguage(m) {
		return tensor.Shape{n, m.Config.Seq, m.Config.Vocab}
	}
	return tensor.Shape{n, m.Config.Classes}
}

// drawLabels returns labels for n samples of m, uniform over its
// classes: one a sample, or one a position of a language model's.
func drawLabels(rng *rand.Rand, m *models.Model, n int) []int32 {
	if isLanguage(m) {
		n *= m.Config.Seq
	}
	labels := make([]int32, n)
	for i := range labels {
		labels[i] = int32(rng.IntN(m.Config.Classes))
	}
	return labels
}

// RandomizeNorms moves every layer norm's and RMS norm's weight into
// [0.5, 1.5) and every layer norm's bias into [−0.5, 0.5), away from
// the 1 and 0 they start at (torch's and Hugging Face's), at which an
// error in their gradients, or in one they multiply, could hide; the
// other parameters keep their initial values. RandomizeBatchNorm's
// counterpart for transformers.
func RandomizeNorms(dev tensor.Device, l models.Layer, rng *rand.Rand) {
	models.Walk(l, func(_ string, l models.Layer) {
		switch l := l.(type) {
		case *models.LayerNorm:
			models.Uniform(dev, l.Weight.Value, 0.5, 1.5, rng)
			models.Uniform(dev, l.Bias.Value, -0.5, 0.5, rng)
		case *models.RMSNorm:
			models.Uniform(dev, l.Weight.Value, 0.5, 1.5, rng)
		}
	})
}

// RandomizeFanIn gives l's parameters values of order one at every
// layer's output, for a gradient check of a deep network: every linear
// layer's weight and bias uniform in ±1/√in (so that an output has
// variance about a third of its input's), embeddings uniform in [−1, 1),
// norms as RandomizeNorms; a tied parameter as its first use draws it
// (GPT-2's lm_head.weight as transformer.wte). RandomizeParams's [−1, 1)
// everywhere would make a transformer's attention scores tens of units
// apart, its softmax one-hot and the attention's gradients vanish,
// hiding their errors.
func RandomizeFanIn(dev tensor.Device, l models.Layer, rng *rand.Rand) {
	seen := map[*models.Param]bool{}
	draw := func(p *models.Param, lo, hi float64) {
		if p != nil && !seen[p] {
			seen[p] = true
			models.Uniform(dev, p.Value, lo, hi, rng)
		}
	}
	models.Walk(l, func(_ string, l models.Layer) {
		switch l := l.(type) {
		case *models.Linear:
			b := 1 / math.Sqrt(float64(l.In))
			draw(l.Weight, -b, b)
			draw(l.Bias, -b, b)
		case *models.Embedding:
			draw(l.Weight, -1, 1)
		case *models.PositionEmbedding:
			draw(l.Weight, -1, 1)
		}
	})
	RandomizeNorms(dev, l, rng)
}
