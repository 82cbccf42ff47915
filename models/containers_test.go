package models_test

import (
	"math/rand/v2"
	"testing"

	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/models/modeltest"
	"github.com/pipecast/pipecast/tensor"
)

// TestContainers checks composed blocks against float64 references
// composed from package reference, forward and every gradient, with the
// memory and ownership checks of modeltest.CheckLayer.
func TestContainers(t *testing.T) {
	train := models.Pass{Train: true, Seed: 5, Step: 2}
	tests := []struct {
		name  string
		build func(tensor.Device, *rand.Rand) models.Layer
		in    tensor.Shape
		pass  models.Pass
	}{
		{"sequential conv-bn-relu-maxpool-flatten-linear, batch 3", models.SmallSequential, tensor.Shape{3, 3, 7, 7}, train},
		{"sequential, batch 1, eval", models.SmallSequential, tensor.Shape{1, 3, 7, 7}, models.Pass{}},
		{"concat with a nested concat (inceptionE), batch 2", models.SmallInceptionE, tensor.Shape{2, 4, 5, 5}, train},
		{"concat with a nested concat (inceptionE), batch 1", models.SmallInceptionE, tensor.Shape{1, 4, 3, 5}, train},
		{"residual bottleneck stride 2 with downsample, batch 2", func(dev tensor.Device, rng *rand.Rand) models.Layer {
			return models.SmallBottleneck(dev, rng, 6, 3, 8)
		}, tensor.Shape{2, 6, 7, 5}, train},
		{"residual bottleneck, frozen stats, batch 1", func(dev tensor.Device, rng *rand.Rand) models.Layer {
			return models.SmallBottleneck(dev, rng, 4, 2, 6)
		}, tensor.Shape{1, 4, 5, 5}, models.Pass{Train: true, FreezeStats: true}},
		{"residual with identity shortcut (basic block), batch 3", func(dev tensor.Device, rng *rand.Rand) models.Layer {
			return models.SmallBasicBlock(dev, rng, 3)
		}, tensor.Shape{3, 3, 5, 5}, train},
		// The sum must not be taken in place in the main path's output
		// while a context holds it (the relu saved it), nor in a view of
		// the borrowed input or gradient (an identity path returns one).
		{"residual whose main path ends in a saved relu", func(dev tensor.Device, rng *rand.Rand) models.Layer {
			return models.NewResidual(models.Child{Layer: models.Seq(models.ConvNoBias(dev, rng, 3, 3, 3, 3, 1, 1, 1), models.NewReLU())}, models.Child{}, nil)
		}, tensor.Shape{2, 3, 4, 5}, train},
		{"residual whose main path is an identity view", func(dev tensor.Device, rng *rand.Rand) models.Layer {
			return models.NewResidual(models.Child{Layer: models.NewDropout(0, 1)}, models.Child{Name: "downsample", Layer: models.ConvNoBias(dev, rng, 3, 3, 1, 1, 1, 0, 0)}, nil)
		}, tensor.Shape{2, 3, 4, 5}, train},
		{"sequential with dropout, batch 3", func(dev tensor.Device, rng *rand.Rand) models.Layer {
			return models.Seq(models.NewLinear(dev, 6, 8, true, rng), models.NewReLU(), models.NewDropout(0.5, 1), models.NewLinear(dev, 8, 3, true, rng))
		}, tensor.Shape{3, 6}, models.Pass{Train: true, Seed: 9, Step: 1, Sample: 4}},
		{"empty sequential is the identity", func(tensor.Device, *rand.Rand) models.Layer { return models.Seq() }, tensor.Shape{2, 3}, train},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dev := modeltest.NewDevice(t)
			rng := modeltest.NewRand(uint64(200 + i))
			l := tc.build(dev, rng)
			modeltest.RandomizeParams(dev, l, rng)
			modeltest.CheckLayer(t, dev, l, tc.pass, tc.in, rng, modeltest.BlockRTol, modeltest.BlockATol)
			models.ReleaseLayer(l)
			modeltest.CheckNoLeak(t, dev)
		})
	}
}
