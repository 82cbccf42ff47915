package models_test

import (
	"math/rand/v2"
	"testing"

	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/models/modeltest"
	"github.com/pipecast/pipecast/tensor"
)

// TestLeafLayers checks every leaf layer against its float64 reference,
// forward and backward, at batch 1 and 3 with odd sizes
// (modeltest.CheckLayer).
func TestLeafLayers(t *testing.T) {
	train := models.Pass{Train: true, Seed: 11, Step: 3, Sample: 5}
	eval := models.Pass{}
	conv := func(cfg models.Conv2DConfig) func(tensor.Device, *rand.Rand) models.Layer {
		return func(dev tensor.Device, rng *rand.Rand) models.Layer { return models.NewConv2D(dev, cfg, rng) }
	}
	pad1 := models.Conv2DConfig{In: 3, Out: 4, KH: 3, KW: 3, StrideH: 1, StrideW: 1, PadH: 1, PadW: 1, Bias: true}
	strided := models.Conv2DConfig{In: 3, Out: 5, KH: 3, KW: 2, StrideH: 2, StrideW: 1, PadH: 1, Bias: false}
	bn := func(c int, p tensor.BatchNormParams) func(tensor.Device, *rand.Rand) models.Layer {
		return func(dev tensor.Device, _ *rand.Rand) models.Layer { return models.NewBatchNorm2D(dev, c, p) }
	}
	inception := tensor.BatchNormParams{Momentum: 0.1, Eps: 1e-3}
	linear := func(in, out int, bias bool) func(tensor.Device, *rand.Rand) models.Layer {
		return func(dev tensor.Device, rng *rand.Rand) models.Layer { return models.NewLinear(dev, in, out, bias, rng) }
	}
	fixed := func(l models.Layer) func(tensor.Device, *rand.Rand) models.Layer {
		return func(tensor.Device, *rand.Rand) models.Layer { return l }
	}
	maxPool := tensor.Pool2DParams{KH: 3, KW: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1}
	maxPool2 := tensor.Pool2DParams{KH: 2, KW: 2, StrideH: 2, StrideW: 2}
	avgSame := tensor.Pool2DParams{KH: 3, KW: 3, StrideH: 1, StrideW: 1, PadH: 1, PadW: 1}
	avgStrided := tensor.Pool2DParams{KH: 3, KW: 2, StrideH: 2, StrideW: 2}
	tests := []struct {
		name  string
		build func(tensor.Device, *rand.Rand) models.Layer
		in    tensor.Shape
		pass  models.Pass
	}{
		{"conv2d 3x3 pad 1 bias, batch 1", conv(pad1), tensor.Shape{1, 3, 7, 5}, train},
		{"conv2d 3x3 pad 1 bias, batch 3", conv(pad1), tensor.Shape{3, 3, 7, 5}, train},
		{"conv2d 3x2 stride 2x1 no bias, batch 3", conv(strided), tensor.Shape{3, 3, 9, 5}, train},
		{"batchnorm train, batch 1", bn(3, tensor.DefaultBatchNorm()), tensor.Shape{1, 3, 5, 7}, train},
		{"batchnorm train, batch 3", bn(3, tensor.DefaultBatchNorm()), tensor.Shape{3, 3, 5, 7}, train},
		{"batchnorm train eps 1e-3 momentum 0.3", bn(2, tensor.BatchNormParams{Momentum: 0.3, Eps: 1e-3}), tensor.Shape{3, 2, 3, 3}, train},
		{"batchnorm train on [N, C]", bn(5, tensor.DefaultBatchNorm()), tensor.Shape{3, 5}, train},
		{"batchnorm train, frozen stats", bn(3, inception), tensor.Shape{3, 3, 5, 7}, models.Pass{Train: true, FreezeStats: true}},
		{"batchnorm eval, batch 1", bn(3, inception), tensor.Shape{1, 3, 5, 7}, eval},
		{"batchnorm eval on [N, C]", bn(5, tensor.DefaultBatchNorm()), tensor.Shape{3, 5}, eval},
		{"relu, batch 1", fixed(models.NewReLU()), tensor.Shape{1, 3, 5, 7}, train},
		{"relu on [N, F], batch 3", fixed(models.NewReLU()), tensor.Shape{3, 11}, train},
		{"maxpool 3x3 stride 2 pad 1, batch 1", fixed(models.NewMaxPool2D(maxPool)), tensor.Shape{1, 2, 7, 9}, train},
		{"maxpool 3x3 stride 2 pad 1, batch 3", fixed(models.NewMaxPool2D(maxPool)), tensor.Shape{3, 2, 7, 9}, train},
		{"maxpool 2x2 stride 2 on odd sizes", fixed(models.NewMaxPool2D(maxPool2)), tensor.Shape{3, 2, 7, 5}, train},
		{"avgpool 3x3 stride 1 pad 1, batch 1", fixed(models.NewAvgPool2D(avgSame)), tensor.Shape{1, 2, 5, 7}, train},
		{"avgpool 3x2 stride 2, batch 3", fixed(models.NewAvgPool2D(avgStrided)), tensor.Shape{3, 2, 7, 9}, train},
		{"adaptive avgpool to 1x1, batch 3", fixed(models.NewAdaptiveAvgPool2D(1, 1)), tensor.Shape{3, 4, 5, 7}, train},
		{"adaptive avgpool to 3x2, overlapping bins, batch 1", fixed(models.NewAdaptiveAvgPool2D(3, 2)), tensor.Shape{1, 2, 7, 5}, train},
		{"linear with bias, batch 1", linear(7, 5, true), tensor.Shape{1, 7}, train},
		{"linear with bias, batch 3", linear(7, 5, true), tensor.Shape{3, 7}, train},
		{"linear without bias, batch 3", linear(6, 3, false), tensor.Shape{3, 6}, train},
		{"dropout 0.5 train, batch 3", fixed(models.NewDropout(0.5, 4)), tensor.Shape{3, 11}, train},
		{"dropout 0.2 train on images, batch 1", fixed(models.NewDropout(0.2, 9)), tensor.Shape{1, 2, 3, 5}, train},
		{"dropout eval is the identity", fixed(models.NewDropout(0.5, 4)), tensor.Shape{3, 11}, eval},
		{"dropout 0 train is the identity", fixed(models.NewDropout(0, 4)), tensor.Shape{3, 11}, train},
		{"flatten, batch 3", fixed(models.NewFlatten()), tensor.Shape{3, 2, 3, 5}, train},
		{"flatten of [N, F], batch 1", fixed(models.NewFlatten()), tensor.Shape{1, 4}, train},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dev := modeltest.NewDevice(t)
			rng := modeltest.NewRand(uint64(100 + i))
			l := tc.build(dev, rng)
			modeltest.RandomizeParams(dev, l, rng)
			modeltest.CheckLayer(t, dev, l, tc.pass, tc.in, rng, modeltest.LayerRTol, modeltest.LayerATol)
			models.ReleaseLayer(l)
			modeltest.CheckNoLeak(t, dev)
		})
	}
}
