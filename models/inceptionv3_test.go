package models_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/models/modeltest"
	"github.com/pipecast/pipecast/tensor"
)

// inceptionV3Case is torchvision 0.14's inception_v3(aux_logits=False).
// The per-block numbers were read from torchvision with forward hooks on
// every Conv2d and Linear (MACs = output elements × in_channels × kh ×
// kw, and in × out for the linear layer) at one 299×299 sample; they sum
// to the 5.71 GFLOPS torchvision's model table lists (the weights' _ops
// from 0.15 on, which count multiply-accumulates), fc included.
func inceptionV3Case() modeltest.Case {
	stage := func(name string, params, macs int64, out tensor.Shape) modeltest.Stage {
		return modeltest.Stage{Name: name, Out: out, Params: params, MACs: macs}
	}
	stages := []modeltest.Stage{
		stage("Conv2d_1a_3x3", 928, 19_181_664, tensor.Shape{32, 149, 149}),
		stage("Conv2d_2a_3x3", 9_280, 199_148_544, tensor.Shape{32, 147, 147}),
		stage("Conv2d_2b_3x3", 18_560, 398_297_088, tensor.Shape{64, 73, 73}),
		stage("Conv2d_3b_1x1", 5_280, 27_284_480, tensor.Shape{80, 73, 73}),
		stage("Conv2d_4a_3x3", 138_624, 696_867_840, tensor.Shape{192, 35, 35}),
		stage("Mixed_5b", 255_904, 312_345_600, tensor.Shape{256, 35, 35}),
		stage("Mixed_5c", 277_472, 338_688_000, tensor.Shape{288, 35, 35}),
		stage("Mixed_5d", 285_152, 348_096_000, tensor.Shape{288, 35, 35}),
		stage("Mixed_6a", 1_153_280, 401_937_408, tensor.Shape{768, 17, 17}),
		stage("Mixed_6b", 1_297_408, 374_063_104, tensor.Shape{768, 17, 17}),
		stage("Mixed_6c", 1_691_008, 487_702_528, tensor.Shape{768, 17, 17}),
		stage("Mixed_6d", 1_691_008, 487_702_528, tensor.Shape{768, 17, 17}),
		stage("Mixed_6e", 2_141_952, 617_914_368, tensor.Shape{768, 17, 17}),
		stage("Mixed_7a", 1_698_304, 291_004_416, tensor.Shape{1280, 8, 8}),
		stage("Mixed_7b", 5_044_608, 322_437_120, tensor.Shape{2048, 8, 8}),
		stage("Mixed_7c", 6_076_800, 388_497_408, tensor.Shape{2048, 8, 8}),
		stage("head", 2_049_000, 2_048_000, tensor.Shape{1000}),
	}
	var blocks []string
	for _, s := range stages {
		blocks = append(blocks, s.Name)
	}
	return modeltest.Case{
		Model:  "inceptionv3",
		Config: models.Config{Width: 1.0 / 16, Image: 75, Classes: 5},
		Full: modeltest.Full{
			Classes: 1000, Image: 299, MinImage: 75, Input: tensor.Shape{3, 299, 299},
			Params: 23_834_568, MACs: 5_713_216_096,
			Blocks: blocks, Stages: stages,
			// Every convolution is a BasicConv2d's.
			Layers: map[string]int{"Conv2D": 94, "BatchNorm2D": 94, "Linear": 1, "Dropout": 1},
		},
		Sizes: []modeltest.Size{
			// torchvision's min_size (75, 75): the last modules run on
			// a 1×1 grid, where torchvision's hooks give 203,525,728
			// MACs.
			{Name: "image 75, the smallest", Config: models.Config{Image: 75}, MACs: 203_525_728,
				Outs: map[string]tensor.Shape{"Mixed_7c": {2048, 1, 1}, "head": {1000}}},
			// Channels come out scaled and summed: 2048/16 = 128 into
			// fc, as 20 + (24+24) + (24+24) + 12 from Mixed_7c's
			// branches.
			{Name: "width 1/16", Config: models.Config{Width: 1.0 / 16, Image: 75, Classes: 5},
				Outs: map[string]tensor.Shape{"Mixed_7c": {128, 1, 1}, "head": {5}}},
			{Name: "width 1/32", Config: models.Config{Width: 1.0 / 32, Image: 75, Classes: 3}, Params: 22_657},
		},
		Head: []string{"fc.weight", "fc.bias"},
		// torchvision's state_dict has 566 entries without the auxiliary
		// head (580 with it): 94 BasicConv2d's of six entries, and fc's
		// two.
		Names: modeltest.Names{
			Params: 94*3 + 2, Buffers: 94 * 3,
			Golden: "testdata/statedict_inceptionv3.txt",
			Slices: inceptionNames(),
		},
		// Every convolution's and the classifier's weight from N(0,
		// 0.1²) truncated to [−2, 2] (20 standard deviations, so its
		// moments are the normal's to double precision), fc's bias
		// torch's default. Each layer is checked on its own, so that one
		// left at torch's default (uniform, std 1/√(3·fan_in)) shows.
		Init: modeltest.Init{
			Config: models.Config{Width: 1.0 / 8, Image: 75, Classes: 10},
			Rule: func(_ string, l models.Layer, param string) (modeltest.Dist, bool) {
				switch l := l.(type) {
				case *models.Conv2D:
					return modeltest.TruncNormal(0, 0.1, -2, 2), param == "weight"
				case *models.Linear:
					if param == "bias" {
						return modeltest.TorchDefault(l.In), true
					}
					return modeltest.TruncNormal(0, 0.1, -2, 2), true
				}
				return modeltest.Dist{}, false
			},
		},
		// Image 107 leaves Mixed_7a to Mixed_7c 2×2, so that their batch
		// norms normalise eight values per channel: at 75 they see two,
		// and over seeds 50 to 57 the worst errors against the mirror
		// were 4.4e-3 of the largest logit and 6.5e-2 of the largest
		// gradient (in conv1's); at 107, 1.6e-4 and 4.5e-3 (1.0e-4 for
		// the test's seed), within StepOutTol and StepGradTol.
		Step: modeltest.Step{Config: models.Config{Width: 1.0 / 16, Image: 107, Classes: 5}},
		Grad: inceptionGrad,
	}
}

// inceptionGrad checks the whole network, at the smallest input and
// width 1/32 (22,657 parameters), in evaluation mode. In training mode
// the float32 network cannot be held to a tolerance that still means
// something: each of the up to 17 batch norms in a row normalises by
// batch statistics that it computes from its float32 input, and its
// backward projects the gradient onto the complement of that input's
// mean and direction, which cancels; over the whole network (with
// RandomizeParams's values) the error measured against the mirror was
// 5e-5 to 2e-4 of the largest gradient on most seeds, and up to 0.16 on
// some, where a ReLU input within 1e-5 of zero falls on the other side of
// the kink in float32 and a whole stem channel's statistics move with
// it. In evaluation mode a batch norm is affine and the worst error over
// twelve seeds was 6.9e-7 of the largest gradient. Training mode is
// checked block by block, on 7×7 inputs: large enough for every block
// (Mixed_6a and Mixed_7a need 3×3) and for batch statistics of at least
// eight values, small enough that the mirror's forwards are cheap; and
// as a whole at torchvision's initialisation by the train step.
var inceptionGrad = modeltest.Grad{
	Config:  models.Config{Width: 1.0 / 32, Image: 75, Classes: 3},
	Samples: 48, ShortSamples: 8,
	BlockImage: 7, BlockSamples: 16,
}

// inceptionNames are runs of state_dict names at both ends of the
// network and across an InceptionE and an InceptionB.
func inceptionNames() []modeltest.Slice {
	convKeys := func(paths ...string) []string {
		var keys []string
		for _, p := range paths {
			keys = append(keys, p+".conv.weight", p+".bn.weight", p+".bn.bias",
				p+".bn.running_mean", p+".bn.running_var", p+".bn.num_batches_tracked")
		}
		return keys
	}
	under := func(module string, branches ...string) modeltest.Slice {
		for i, b := range branches {
			branches[i] = module + "." + b
		}
		return modeltest.Slice{What: module, Of: modeltest.StateDictNames, Under: module + ".", Want: convKeys(branches...)}
	}
	return []modeltest.Slice{
		{What: "first parameters", Of: modeltest.ParamNames, Want: []string{
			"Conv2d_1a_3x3.conv.weight", "Conv2d_1a_3x3.bn.weight", "Conv2d_1a_3x3.bn.bias",
			"Conv2d_2a_3x3.conv.weight", "Conv2d_2a_3x3.bn.weight"}},
		{What: "last parameters", Of: modeltest.ParamNames, At: -5, Want: []string{
			"Mixed_7c.branch_pool.conv.weight", "Mixed_7c.branch_pool.bn.weight", "Mixed_7c.branch_pool.bn.bias",
			"fc.weight", "fc.bias"}},
		{What: "first buffers", Of: modeltest.BufferNames, Want: []string{
			"Conv2d_1a_3x3.bn.running_mean", "Conv2d_1a_3x3.bn.running_var", "Conv2d_1a_3x3.bn.num_batches_tracked",
			"Conv2d_2a_3x3.bn.running_mean"}},
		{What: "last buffers", Of: modeltest.BufferNames, At: -4, Want: []string{
			"Mixed_7c.branch3x3dbl_3b.bn.num_batches_tracked",
			"Mixed_7c.branch_pool.bn.running_mean", "Mixed_7c.branch_pool.bn.running_var",
			"Mixed_7c.branch_pool.bn.num_batches_tracked"}},
		{What: "first state_dict entries", Of: modeltest.StateDictNames,
			Want: append(convKeys("Conv2d_1a_3x3"), "Conv2d_2a_3x3.conv.weight")},
		{What: "last state_dict entries", Of: modeltest.StateDictNames, At: -3, Want: []string{
			"Mixed_7c.branch_pool.bn.num_batches_tracked", "fc.weight", "fc.bias"}},
		under("Mixed_7b", "branch1x1", "branch3x3_1", "branch3x3_2a", "branch3x3_2b",
			"branch3x3dbl_1", "branch3x3dbl_2", "branch3x3dbl_3a", "branch3x3dbl_3b", "branch_pool"),
		under("Mixed_6a", "branch3x3", "branch3x3dbl_1", "branch3x3dbl_2", "branch3x3dbl_3"),
	}
}

// TestInceptionV3Kernels checks the branch convolutions of Mixed_7b (an
// InceptionE), with the kernels that tell the 1×3 from the 3×1
// (torchvision's concat order: 2a before 2b).
func TestInceptionV3Kernels(t *testing.T) {
	m, err := models.Describe("inceptionv3", models.Config{})
	if err != nil {
		t.Fatal(err)
	}
	kernels := map[string][2]int{}
	models.Walk(m.Net, func(path string, l models.Layer) {
		if c, ok := l.(*models.Conv2D); ok && strings.HasPrefix(path, "Mixed_7b.") {
			kernels[strings.TrimSuffix(path, ".conv")] = [2]int{c.Cfg.KH, c.Cfg.KW}
		}
	})
	for name, k := range map[string][2]int{
		"Mixed_7b.branch3x3_2a": {1, 3}, "Mixed_7b.branch3x3_2b": {3, 1},
		"Mixed_7b.branch3x3dbl_2": {3, 3}, "Mixed_7b.branch3x3dbl_3a": {1, 3},
		"Mixed_7b.branch3x3dbl_3b": {3, 1}, "Mixed_7b.branch_pool": {1, 1},
	} {
		if kernels[name] != k {
			t.Errorf("%s: kernel %v, want %v", name, kernels[name], k)
		}
	}
}

// TestInceptionV3Structure checks what names, shapes and counts do not
// show: which pooling each place uses, that every convolution is a
// BasicConv2d (no bias, batch norm with eps 0.001 and momentum 0.1,
// ReLU), and the dropout.
func TestInceptionV3Structure(t *testing.T) {
	for _, tc := range []struct {
		name      string
		noDropout bool
		p         float32
	}{{"dropout", false, 0.5}, {"no dropout", true, 0}} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := models.Describe("inceptionv3", models.Config{NoDropout: tc.noDropout})
			if err != nil {
				t.Fatal(err)
			}
			var pools []string
			basics := 0
			models.Walk(m.Net, func(path string, l models.Layer) {
				switch l := l.(type) {
				case *models.MaxPool2D:
					pools = append(pools, fmt.Sprintf("%s max %+v", path, l.P))
				case *models.AvgPool2D:
					pools = append(pools, fmt.Sprintf("%s avg %+v", path, l.P))
				case *models.AdaptiveAvgPool2D:
					pools = append(pools, fmt.Sprintf("%s adaptive %dx%d", path, l.OH, l.OW))
				case *models.Dropout:
					if path != "dropout" || l.P != tc.p {
						t.Errorf("dropout %q with p %v, want \"dropout\" with %v", path, l.P, tc.p)
					}
				case *models.Sequential:
					if len(l.Layers) == 0 || l.Layers[0].Name != "conv" {
						return
					}
					basics++
					if len(l.Layers) != 3 {
						t.Errorf("%s: %d layers, want a BasicConv2d's 3", path, len(l.Layers))
						return
					}
					conv, _ := l.Layers[0].Layer.(*models.Conv2D)
					bn, _ := l.Layers[1].Layer.(*models.BatchNorm2D)
					_, relu := l.Layers[2].Layer.(*models.ReLU)
					if conv == nil || conv.Bias != nil || bn == nil || l.Layers[1].Name != "bn" ||
						bn.P != (tensor.BatchNormParams{Momentum: 0.1, Eps: 1e-3}) || !relu {
						t.Errorf("%s: not a BasicConv2d", path)
					}
				}
			})
			// The suite counts the convolutions: 94.
			if basics != 94 {
				t.Errorf("got %d BasicConv2d's, want 94", basics)
			}
			var want []string
			maxPool := tensor.Pool2DParams{KH: 3, KW: 3, StrideH: 2, StrideW: 2}
			avgPool := tensor.Pool2DParams{KH: 3, KW: 3, StrideH: 1, StrideW: 1, PadH: 1, PadW: 1}
			for _, path := range []string{"maxpool1", "maxpool2", "Mixed_5b", "Mixed_5c", "Mixed_5d", "Mixed_6a",
				"Mixed_6b", "Mixed_6c", "Mixed_6d", "Mixed_6e", "Mixed_7a", "Mixed_7b", "Mixed_7c"} {
				if strings.HasPrefix(path, "max") || path == "Mixed_6a" || path == "Mixed_7a" {
					want = append(want, fmt.Sprintf("%s max %+v", path, maxPool))
				} else {
					want = append(want, fmt.Sprintf("%s avg %+v", path, avgPool))
				}
			}
			want = append(want, "avgpool adaptive 1x1")
			if !slices.Equal(pools, want) {
				t.Errorf("poolings:\ngot  %q\nwant %q", pools, want)
			}
		})
	}
}
