package models_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/models/modeltest"
	"github.com/pipecast/pipecast/tensor"
)

// The reference numbers below were read from torchvision 0.14's
// vgg16_bn(): sum(p.numel() for p in m.parameters()), len(m.state_dict()),
// and the MACs of its Conv2d and Linear modules summed by forward hooks
// (out.numel() per sample × in_channels·kh·kw, or × in_features) on one
// sample. Networks with other widths are torchvision's VGG built from
// cfgs["D"] with every channel count and the hidden 4096 scaled and
// rounded as Builder.Channels does.
const (
	vggParams     = 138_365_992
	vggParamsHalf = 35_621_896
	vggParams10   = 134_309_962
	// vggMACs is torchvision's "15.47 GFLOPS" for vgg16_bn, which counts
	// multiply-accumulates: 15,346,630,656 in the convolutions and
	// 123,633,664 (25088·4096 + 4096·4096 + 4096·1000) in the linear
	// layers. Batch norm, ReLU and pooling are not counted.
	vggMACs   = 15_470_264_320
	vggMACs32 = 436_830_208 // at 32×32 the avgpool enlarges 1×1 to 7×7; the classifier is the same
	vggMACs40 = 597_078_016
)

// vgg16BNCase is torchvision's vgg16_bn. Its blocks are a conv-bn-relu
// triple named by its convolution, each max-pool, and the classifier's
// three linear layers.
func vgg16BNCase() modeltest.Case {
	return modeltest.Case{
		Model:  "vgg16bn",
		Config: models.Config{Width: 1.0 / 16, Image: 32, Classes: 10},
		Full: modeltest.Full{
			Classes: 1000, Image: 224, MinImage: 32, Input: tensor.Shape{3, 224, 224},
			Params: vggParams, MACs: vggMACs,
			Blocks: []string{
				"features.0", "features.3", "features.6",
				"features.7", "features.10", "features.13",
				"features.14", "features.17", "features.20", "features.23",
				"features.24", "features.27", "features.30", "features.33",
				"features.34", "features.37", "features.40", "features.43",
				"classifier.0", "classifier.3", "classifier.6",
			},
			Stages: []modeltest.Stage{
				vggStage("features.0", tensor.Shape{64, 224, 224}, 3*64*9+64+2*64, 224*224*64*27, 4*64*224*224),
				vggStage("features.6", tensor.Shape{64, 112, 112}, 0, 0, 4*64*112*112),
				vggStage("features.40", tensor.Shape{512, 14, 14}, 512*512*9+512+2*512, 14*14*512*512*9, 4*512*14*14),
				vggStage("features.43", tensor.Shape{512, 7, 7}, 0, 0, 4*512*7*7),
				vggStage("classifier.0", tensor.Shape{4096}, 25088*4096+4096, 25088*4096, 4*4096),
				vggStage("classifier.3", tensor.Shape{4096}, 4096*4096+4096, 4096*4096, 4*4096),
				vggStage("classifier.6", tensor.Shape{1000}, 4096*1000+1000, 4096*1000, 4*1000),
			},
			Layers: map[string]int{"Conv2D": 13, "BatchNorm2D": 13, "MaxPool2D": 5, "Linear": 3, "Dropout": 2},
		},
		Sizes: append(vggSizes(),
			// torchvision's VGG at the gradient check's widths.
			modeltest.Size{Name: "width 1/256", Config: models.Config{Width: 1.0 / 256, Image: 32, Classes: 3}, Params: 2243},
		),
		Head: []string{"classifier.6.weight", "classifier.6.bias"},
		// torchvision's state_dict order interleaves each module's
		// parameters and buffers; Params and Buffers list them apart,
		// each in that order.
		Names: modeltest.Names{
			Params: 13*2 + 13*2 + 3*2, Buffers: 13 * 3,
			Golden: "testdata/statedict_vgg16bn.txt",
			Slices: []modeltest.Slice{
				{What: "first parameters", Of: modeltest.ParamNames, Want: []string{
					"features.0.weight", "features.0.bias", "features.1.weight", "features.1.bias", "features.3.weight"}},
				{What: "last parameters", Of: modeltest.ParamNames, At: -8, Want: []string{
					"features.41.weight", "features.41.bias", "classifier.0.weight", "classifier.0.bias",
					"classifier.3.weight", "classifier.3.bias", "classifier.6.weight", "classifier.6.bias"}},
				{What: "first buffers", Of: modeltest.BufferNames, Want: []string{
					"features.1.running_mean", "features.1.running_var", "features.1.num_batches_tracked", "features.4.running_mean"}},
				{What: "last buffers", Of: modeltest.BufferNames, At: -4, Want: []string{
					"features.38.num_batches_tracked", "features.41.running_mean", "features.41.running_var", "features.41.num_batches_tracked"}},
			},
		},
		Init: vggInit,
		// Logits start near zero (weights of std 0.01 in the
		// classifier), so the loss is near log(classes). At torchvision's
		// initialisation every batch norm's 1/σ stays of order one: over
		// seeds 50 to 57 the worst errors against the mirror were 2.4e-6
		// of the largest logit and 2.0e-6 of the largest gradient, so
		// 1e-4 leaves a margin of forty.
		Step: modeltest.Step{LossNear: 0.5, OutTol: 1e-4, GradTol: 1e-4},
		// Central differences of the float64 mirror for every input
		// element and every parameter, two forwards each, and the 32×32
		// convolutions make a forward cost about half a millisecond
		// whatever the width. Width 1/256 (1, 1, 1, 2 and 2 channels in
		// the five stages, hidden width 16: 2,243 parameters) and batch 2
		// (6,144 input elements) keep that to seconds; batch 2 still
		// makes batch norm and dropout mix and key several samples. The
		// block tolerances hold for thirteen conv-bn-relu layers because
		// vggRandomize keeps every batch norm's 1/σ of order one.
		Grad: modeltest.Grad{
			Config:    models.Config{Width: 1.0 / 256, Image: 32, Classes: 3},
			Pass:      models.Pass{Train: true, Seed: 11, Step: 3, Sample: 4},
			Randomize: vggRandomize,
			// The seed at which the worst error measured is 4e-7 of the
			// largest gradient, a twenty-fifth of BlockATol.
			Seed: 3,
			Slow: true,
			// Every gradient but the convolutions' biases (which batch
			// norm cancels) must be of the order of the largest.
			Alive: 1e-3,
		},
	}
}

// vgg16Case is torchvision's vgg16, the same network without batch
// normalisation: 138,357,544 parameters at 1000 classes, 32 state_dict
// entries, and module indices conv, relu (features.0, features.1), pool
// at features.4.
func vgg16Case() modeltest.Case {
	c := vgg16BNCase()
	c.Model = "vgg16"
	c.Full.Params, c.Full.Stages = 138_357_544, nil
	// Without batch norm the MACs are the same.
	c.Full.Blocks = []string{
		"features.0", "features.2", "features.4",
		"features.5", "features.7", "features.9",
		"features.10", "features.12", "features.14", "features.16",
		"features.17", "features.19", "features.21", "features.23",
		"features.24", "features.26", "features.28", "features.30",
		"classifier.0", "classifier.3", "classifier.6",
	}
	c.Full.Layers = map[string]int{"Conv2D": 13, "BatchNorm2D": 0, "MaxPool2D": 5, "Linear": 3, "Dropout": 2}
	c.Sizes = []modeltest.Size{{Name: "10 classes", Config: models.Config{Classes: 10}, Params: 138_357_544 - 990*4097}}
	c.Names = modeltest.Names{
		Params: 32,
		Slices: []modeltest.Slice{
			{What: "first parameters", Of: modeltest.StateDictNames, Want: []string{
				"features.0.weight", "features.0.bias", "features.2.weight", "features.2.bias", "features.5.weight"}},
			{What: "last parameters", Of: modeltest.StateDictNames, At: -1, Want: []string{"classifier.6.bias"}},
		},
	}
	// Without batch norm nothing keeps a one-channel layer alive, so the
	// check runs wider, with central differences at sampled coordinates.
	c.Grad = modeltest.Grad{
		Config:    models.Config{Width: 1.0 / 32, Image: 32, Classes: 3},
		Pass:      models.Pass{Train: true, Seed: 11, Step: 3, Sample: 4},
		Randomize: vggRandomize,
		Samples:   16,
		Alive:     1e-3,
	}
	return c
}

// vggStage is one block of vgg16bn at torchvision's configuration: its
// output, parameters, MACs and output bytes.
func vggStage(name string, out tensor.Shape, params, macs, outputBytes int64) modeltest.Stage {
	return modeltest.Stage{Name: name, Out: out, Params: params, MACs: macs, OutputBytes: outputBytes}
}

// vggSizes are vgg16bn's other configurations: the avgpool makes the
// parameters independent of the image.
func vggSizes() []modeltest.Size {
	out := map[string]tensor.Shape{"classifier.6": {1000}}
	return []modeltest.Size{
		{Name: "10 classes", Config: models.Config{Classes: 10}, Params: vggParams10},
		{Name: "width 0.5", Config: models.Config{Width: 0.5}, Params: vggParamsHalf},
		{Name: "image 32, the smallest", Config: models.Config{Image: 32}, Params: vggParams, MACs: vggMACs32, Outs: out},
		{Name: "image 40", Config: models.Config{Image: 40}, Params: vggParams, MACs: vggMACs40, Outs: out},
	}
}

// vggInit is VGG._initialize_weights's: convolutions N(0, 2/fan_out)
// with fan_out = out·3·3, linear layers N(0, 0.01²), biases 0. At a
// quarter of the width the smallest tensor (features.0, 432 weights)
// still tells fan_out from torch's default uniform initialisation, whose
// std is a third of it, and the others tell fan_out from fan_in wherever
// the two differ.
var vggInit = modeltest.Init{
	Config: models.Config{Width: 0.25},
	Rule: func(_ string, l models.Layer, param string) (modeltest.Dist, bool) {
		switch l := l.(type) {
		case *models.Conv2D:
			if param == "bias" {
				return modeltest.Const(0), true
			}
			_, fanOut := models.Fans(l.Weight.Value.Shape())
			return modeltest.Normal(0, math.Sqrt(2/float64(fanOut))), true
		case *models.Linear:
			if param == "bias" {
				return modeltest.Const(0), true
			}
			return modeltest.Normal(0, 0.01), true
		}
		return modeltest.Dist{}, false
	},
}

// vggRandomize gives a deep network's parameters random values that keep
// its gradients of one order from the classifier to the first layer, so
// that the gradient check's tolerances, relative to the largest gradient,
// test every layer. RandomizeParams's uniform [−1, 1) suits a block but
// not thirteen conv-bn-relu layers: a negative γ after a one-channel
// convolution lets the ReLU zero the whole layer, whose constant output
// the next batch norm then divides by √eps. Here weights are uniform with
// the variance that preserves activations through a ReLU (He et al.,
// ICCV 2015: 2/fan_in), γ is in [0.5, 1.5), biases and β are in
// [−0.5, 0.5), and the running statistics are RandomizeParams's.
func vggRandomize(dev tensor.Device, l models.Layer, rng *rand.Rand) {
	modeltest.RandomizeParams(dev, l, rng)
	models.Walk(l, func(_ string, l models.Layer) {
		switch l := l.(type) {
		case *models.Conv2D:
			models.KaimingUniform(dev, l.Weight.Value, 0, models.FanIn, rng)
			models.Uniform(dev, l.Bias.Value, -0.5, 0.5, rng)
		case *models.Linear:
			models.KaimingUniform(dev, l.Weight.Value, 0, models.FanIn, rng)
			models.Uniform(dev, l.Bias.Value, -0.5, 0.5, rng)
		case *models.BatchNorm2D:
			models.Uniform(dev, l.Weight.Value, 0.5, 1.5, rng)
			models.Uniform(dev, l.Bias.Value, -0.5, 0.5, rng)
		}
	})
}

// TestVGG16BNWidth checks that width 0.5 halves every channel count and
// hidden width, but for the image's three channels and the classes.
func TestVGG16BNWidth(t *testing.T) {
	shapes := func(cfg models.Config) map[string]tensor.Shape {
		m, err := models.Describe("vgg16bn", cfg)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]tensor.Shape{}
		for _, p := range models.Params(m.Net) {
			out[p.Name] = p.Param.Value.Shape()
		}
		return out
	}
	base, got := shapes(models.Config{}), shapes(models.Config{Width: 0.5})
	for name, s := range base {
		want := s.Clone()
		switch {
		case name == "classifier.0.weight":
			want = tensor.Shape{2048, 256 * 7 * 7}
		case name == "classifier.6.weight":
			want[1] /= 2 // the classes stay
		case name == "classifier.6.bias":
		case len(s) == 4 && s[1] == 3: // the first convolution reads the image's 3 channels
			want[0] /= 2
		default:
			for i := range min(len(want), 2) {
				want[i] /= 2
			}
		}
		if !got[name].Equal(want) {
			t.Errorf("%s: got %v, want %v", name, got[name], want)
		}
	}
}
