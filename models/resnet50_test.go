package models_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/models/modeltest"
	"github.com/pipecast/pipecast/tensor"
)

// resNet50Case is torchvision 0.14's resnet50(): the numbers at the
// default configuration are sum(p.numel() for p in m.parameters()), the
// lengths of named_parameters() and named_buffers(), and the MACs
// counted with forward hooks on a 224×224 input (output elements ×
// in-channels × k² for every nn.Conv2d plus in × out for the nn.Linear:
// the 4.09 GFLOPS torchvision lists, its "FLOPS" being
// multiply-accumulates).
func resNet50Case() modeltest.Case {
	return modeltest.Case{
		Model: "resnet50",
		// Width 1/64 leaves one channel in the stem and planes 1, 2, 4,
		// 8. Image 33 leaves layer4 2×2, so that its batch norms
		// normalise eight values per channel; at 32 they would see two,
		// whose normalised values are ±1 whatever the input.
		Config: models.Config{Width: 1.0 / 64, Image: 33, Classes: 3},
		Full: modeltest.Full{
			Classes: 1000, Image: 224, MinImage: 1, Input: tensor.Shape{3, 224, 224},
			Params: 25_557_032, MACs: 4_089_184_256,
			Blocks: strings.Fields("stem layer1.0 layer1.1 layer1.2 layer2.0 layer2.1 layer2.2 layer2.3 " +
				"layer3.0 layer3.1 layer3.2 layer3.3 layer3.4 layer3.5 layer4.0 layer4.1 layer4.2 head"),
			// The parameters and forward MACs of torchvision's top-level
			// modules, summed over the blocks of each.
			Stages: []modeltest.Stage{
				{Name: "stem", Out: tensor.Shape{64, 56, 56}, Params: 9408 + 128, MACs: 118_013_952},
				{Name: "layer1", Out: tensor.Shape{256, 56, 56}, Params: 215_808, MACs: 667_942_912},
				{Name: "layer2", Out: tensor.Shape{512, 28, 28}, Params: 1_219_584, MACs: 1_027_604_480},
				{Name: "layer3", Out: tensor.Shape{1024, 14, 14}, Params: 7_098_368, MACs: 1_464_336_384},
				{Name: "layer4", Out: tensor.Shape{2048, 7, 7}, Params: 14_964_736, MACs: 809_238_528},
				{Name: "head", Out: tensor.Shape{1000}, Params: 2_049_000, MACs: 2_048_000},
			},
			// One ReLU in the stem and three per Bottleneck, as
			// torchvision applies them.
			Layers: map[string]int{"Conv2D": 53, "BatchNorm2D": 53, "ReLU": 49, "Residual": 16, "Linear": 1},
		},
		Sizes: []modeltest.Size{
			{Name: "10 classes", Config: models.Config{Classes: 10}, Params: 25_557_032 - 990*2049},
			// Width 1/16 leaves 4 channels in the stem and planes 4, 8,
			// 16, 32.
			{Name: "width 1/16", Config: models.Config{Width: 1.0 / 16, Image: 32, Classes: 10},
				Outs: map[string]tensor.Shape{"layer4.2": {128, 1, 1}}},
			// Sizes are ceil(s/2) after each of the five stride-2
			// layers.
			resNetImage(224, 7), resNetImage(32, 1), resNetImage(33, 2), resNetImage(65, 3),
		},
		Head: []string{"fc.weight", "fc.bias"},
		Names: modeltest.Names{
			Params: 161, Buffers: 159,
			Golden: "testdata/statedict_resnet50.txt",
			Slices: []modeltest.Slice{
				{What: "first parameters", Of: modeltest.ParamNames, Want: []string{
					"conv1.weight", "bn1.weight", "bn1.bias", "layer1.0.conv1.weight", "layer1.0.bn1.weight",
					"layer1.0.bn1.bias", "layer1.0.conv2.weight", "layer1.0.bn2.weight"}},
				{What: "layer1.0's last parameters", Of: modeltest.ParamNames, At: 10, Want: []string{
					"layer1.0.bn3.weight", "layer1.0.bn3.bias", "layer1.0.downsample.0.weight",
					"layer1.0.downsample.1.weight", "layer1.0.downsample.1.bias", "layer1.1.conv1.weight"}},
				{What: "last parameters", Of: modeltest.ParamNames, At: -6, Want: []string{
					"layer4.2.bn2.bias", "layer4.2.conv3.weight", "layer4.2.bn3.weight", "layer4.2.bn3.bias",
					"fc.weight", "fc.bias"}},
				{What: "first buffers", Of: modeltest.BufferNames, Want: []string{
					"bn1.running_mean", "bn1.running_var", "bn1.num_batches_tracked", "layer1.0.bn1.running_mean",
					"layer1.0.bn1.running_var", "layer1.0.bn1.num_batches_tracked", "layer1.0.bn2.running_mean"}},
				{What: "layer1.0's downsample buffers", Of: modeltest.BufferNames, At: 12, Want: []string{
					"layer1.0.downsample.1.running_mean", "layer1.0.downsample.1.running_var",
					"layer1.0.downsample.1.num_batches_tracked", "layer1.1.bn1.running_mean"}},
				{What: "last buffers", Of: modeltest.BufferNames, At: -4, Want: []string{
					"layer4.2.bn2.num_batches_tracked", "layer4.2.bn3.running_mean", "layer4.2.bn3.running_var",
					"layer4.2.bn3.num_batches_tracked"}},
			},
		},
		// Every convolution N(0, 2/fan_out), fan_out = out·k²
		// (kaiming_normal_, mode "fan_out", nonlinearity "relu"); fc
		// torch's default. A quarter of the width gives every tensor
		// enough values to tell fan_out from fan_in.
		Init: modeltest.Init{
			Config: models.Config{Width: 0.25, Image: 32},
			Rule: func(_ string, l models.Layer, param string) (modeltest.Dist, bool) {
				switch l := l.(type) {
				case *models.Conv2D:
					c := l.Cfg
					return modeltest.Normal(0, math.Sqrt(2/float64(c.Out*c.KH*c.KW))), param == "weight"
				case *models.Linear:
					return modeltest.TorchDefault(l.In), true
				}
				return modeltest.Dist{}, false
			},
		},
		Step: modeltest.Step{Randomize: modeltest.RandomizeBatchNorm},
		// The gradient check runs in evaluation mode, batch norm with
		// (randomised) running statistics. In training mode every batch
		// norm makes each later activation depend on every parameter
		// before it, so that a step of the central differences' size
		// moves thousands of ReLU and max-pool inputs and some cross a
		// kink (an error of up to 4% measured at width 1/64, image 33);
		// and the running statistics after sixteen batch norms in series
		// exceed the single-layer tolerance CheckLayer holds them to.
		// The train step covers that mode against the mirror.
		Grad: modeltest.Grad{Config: models.Config{Width: 1.0 / 64, Image: 16, Classes: 3}, Slow: true},
	}
}

// resNetImage is a width-1/64 resnet50 at an image size, with the size of
// layer4's output.
func resNetImage(image, layer4 int) modeltest.Size {
	return modeltest.Size{
		Name:   fmt.Sprintf("image %d", image),
		Config: models.Config{Image: image, Width: 1.0 / 64},
		Outs:   map[string]tensor.Shape{"layer4.2": {32, layer4, layer4}},
	}
}

// TestResNet50Structure checks the layers themselves, which parameter
// names and counts do not pin down: every convolution's kernel, stride
// and padding, where the ReLUs are, which blocks have a downsample, the
// pools and the head.
func TestResNet50Structure(t *testing.T) {
	m, err := models.Describe("resnet50", models.Config{})
	if err != nil {
		t.Fatal(err)
	}
	// torchvision's convolutions other than 1×1 at stride 1, from its
	// named_modules(): the stride of a stage's first Bottleneck is on
	// its 3×3 conv2 (v1.5) and on its downsample.
	wantConvs := map[string]string{"conv1": "7x7 stride 2 pad 3"}
	for i, blocks := range []int{3, 4, 6, 3} {
		for j := range blocks {
			name := fmt.Sprintf("layer%d.%d.", i+1, j)
			wantConvs[name+"conv2"] = "3x3 stride 1 pad 1"
			if j == 0 && i > 0 {
				wantConvs[name+"conv2"] = "3x3 stride 2 pad 1"
				wantConvs[name+"downsample.0"] = "1x1 stride 2 pad 0"
			}
		}
	}
	var seq []string
	models.Walk(m.Net, func(path string, l models.Layer) {
		switch l := l.(type) {
		case *models.Conv2D:
			c := l.Cfg
			got := fmt.Sprintf("%dx%d stride %d pad %d", c.KH, c.KW, c.StrideH, c.PadH)
			want, ok := wantConvs[path]
			if !ok {
				want = "1x1 stride 1 pad 0"
			}
			if got != want || c.StrideW != c.StrideH || c.PadW != c.PadH || c.Bias {
				t.Errorf("%s: got %s (%+v), want %s without bias", path, got, c, want)
			}
		case *models.Residual:
			main, ok := l.Main.Layer.(*models.Sequential)
			if !ok || l.Main.Name != "" {
				t.Fatalf("%s: main path %q is a %T, want an unnamed Sequential", path, l.Main.Name, l.Main.Layer)
			}
			var kinds []string
			for _, c := range main.Layers {
				kinds = append(kinds, fmt.Sprintf("%T", c.Layer))
			}
			want := "*models.Conv2D *models.BatchNorm2D *models.ReLU *models.Conv2D *models.BatchNorm2D " +
				"*models.ReLU *models.Conv2D *models.BatchNorm2D"
			if got := strings.Join(kinds, " "); got != want {
				t.Errorf("%s: main path %s, want %s", path, got, want)
			}
			if _, ok := l.Post.(*models.ReLU); !ok {
				t.Errorf("%s: post is %T, want a ReLU after the sum", path, l.Post)
			}
		case *models.MaxPool2D:
			p := l.P
			seq = append(seq, fmt.Sprintf("%s maxpool %dx%d stride %d pad %d", path, p.KH, p.KW, p.StrideH, p.PadH))
		case *models.AdaptiveAvgPool2D:
			seq = append(seq, fmt.Sprintf("%s adaptiveavgpool %dx%d", path, l.OH, l.OW))
		case *models.Flatten:
			seq = append(seq, "flatten")
		case *models.Linear:
			seq = append(seq, fmt.Sprintf("%s linear %d→%d bias %v", path, l.In, l.Out, l.Bias != nil))
		}
	})
	want := "maxpool maxpool 3x3 stride 2 pad 1; avgpool adaptiveavgpool 1x1; flatten; fc linear 2048→1000 bias true"
	if got := strings.Join(seq, "; "); got != want {
		t.Errorf("pools and head: got %s, want %s", got, want)
	}
	// Only the first Bottleneck of each stage has a downsample: it
	// changes the channels (and, after layer1, the resolution).
	for _, b := range m.Blocks[1:17] {
		has := false
		for _, p := range models.Params(b.Layer) {
			has = has || strings.HasPrefix(p.Name, b.Name+".downsample.")
		}
		if want := strings.HasSuffix(b.Name, ".0"); has != want {
			t.Errorf("%s: has a downsample %v, want %v", b.Name, has, want)
		}
	}
}

// TestResNet50SmallestImage checks that every layer that shrinks its
// input maps 1×1 to 1×1, as torchvision's resnet50 does (it trains on a
// batch of two 1×1 images).
func TestResNet50SmallestImage(t *testing.T) {
	m, err := models.Describe("resnet50", models.Config{Image: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range m.Blocks[:17] {
		if b.Out[1] != 1 || b.Out[2] != 1 {
			t.Errorf("image 1: block %s gives %v, want 1×1", b.Name, b.Out)
		}
	}
}
