package models

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/pipecast/pipecast/tensor"
)

// inceptionStateDict returns the state_dict keys of l in torch's order:
// depth first, each module's parameters before its buffers.
func inceptionStateDict(l Layer) []string {
	var keys []string
	Walk(l, func(path string, l Layer) {
		for _, p := range l.Params() {
			keys = append(keys, joinName(path, p.Name))
		}
		for _, b := range l.Buffers() {
			keys = append(keys, joinName(path, b.Name))
		}
	})
	return keys
}

// inceptionConvKeys returns the six state_dict keys of a BasicConv2d at
// path, in torch's order.
func inceptionConvKeys(path string) []string {
	return []string{path + ".conv.weight", path + ".bn.weight", path + ".bn.bias",
		path + ".bn.running_mean", path + ".bn.running_var", path + ".bn.num_batches_tracked"}
}

// TestDescribeInceptionV3 checks the full-size network against
// torchvision 0.14's inception_v3(aux_logits=False): parameters,
// state_dict entries, and per block the parameters, forward MACs and
// output shape. The per-block numbers were read from torchvision with
// forward hooks on every Conv2d and Linear (MACs = output elements ×
// in_channels × kh × kw, and in × out for the linear layer) at one
// 299×299 sample.
func TestDescribeInceptionV3(t *testing.T) {
	m, err := Describe("inceptionv3", Config{})
	if err != nil {
		t.Fatal(err)
	}
	if m.Config.Classes != 1000 || m.Config.Image != 299 {
		t.Errorf("defaults: got %d classes at %d, want 1000 at 299", m.Config.Classes, m.Config.Image)
	}
	if got, want := m.Params(), int64(23_834_568); got != want {
		t.Errorf("params: got %d, want %d", got, want)
	}
	// torchvision's state_dict has 566 entries without the auxiliary
	// head (580 with it): 94 BasicConv2d's of six entries, and fc's two.
	if got, want := len(inceptionStateDict(m.Net)), 566; got != want {
		t.Errorf("state_dict entries: got %d, want %d", got, want)
	}
	// torchvision's model table lists 5.71 GFLOPS for Inception-v3 (the
	// weights' _ops from 0.15 on, which count multiply-accumulates); the
	// hooks above sum to exactly this at 299×299, fc included.
	if got, want := m.MACs(), int64(5_713_216_096); got != want {
		t.Errorf("MACs per sample: got %d, want %d", got, want)
	}
	want := []struct {
		name         string
		params, macs int64
		out          tensor.Shape
	}{
		{"Conv2d_1a_3x3", 928, 19_181_664, tensor.Shape{32, 149, 149}},
		{"Conv2d_2a_3x3", 9_280, 199_148_544, tensor.Shape{32, 147, 147}},
		{"Conv2d_2b_3x3", 18_560, 398_297_088, tensor.Shape{64, 73, 73}},
		{"Conv2d_3b_1x1", 5_280, 27_284_480, tensor.Shape{80, 73, 73}},
		{"Conv2d_4a_3x3", 138_624, 696_867_840, tensor.Shape{192, 35, 35}},
		{"Mixed_5b", 255_904, 312_345_600, tensor.Shape{256, 35, 35}},
		{"Mixed_5c", 277_472, 338_688_000, tensor.Shape{288, 35, 35}},
		{"Mixed_5d", 285_152, 348_096_000, tensor.Shape{288, 35, 35}},
		{"Mixed_6a", 1_153_280, 401_937_408, tensor.Shape{768, 17, 17}},
		{"Mixed_6b", 1_297_408, 374_063_104, tensor.Shape{768, 17, 17}},
		{"Mixed_6c", 1_691_008, 487_702_528, tensor.Shape{768, 17, 17}},
		{"Mixed_6d", 1_691_008, 487_702_528, tensor.Shape{768, 17, 17}},
		{"Mixed_6e", 2_141_952, 617_914_368, tensor.Shape{768, 17, 17}},
		{"Mixed_7a", 1_698_304, 291_004_416, tensor.Shape{1280, 8, 8}},
		{"Mixed_7b", 5_044_608, 322_437_120, tensor.Shape{2048, 8, 8}},
		{"Mixed_7c", 6_076_800, 388_497_408, tensor.Shape{2048, 8, 8}},
		{"head", 2_049_000, 2_048_000, tensor.Shape{1000}},
	}
	if len(m.Blocks) != len(want) {
		t.Fatalf("blocks: got %d, want %d", len(m.Blocks), len(want))
	}
	for i, w := range want {
		bl := m.Blocks[i]
		if bl.Name != w.name || bl.Cost.Params != w.params || bl.Cost.MACs != w.macs || !bl.Out.Equal(w.out) {
			t.Errorf("block %d: got %s with %d params, %d MACs, output %v; want %s with %d, %d, %v",
				i, bl.Name, bl.Cost.Params, bl.Cost.MACs, bl.Out, w.name, w.params, w.macs, w.out)
		}
	}
	if !m.Input.Equal(tensor.Shape{3, 299, 299}) {
		t.Errorf("input: got %v, want [3 299 299]", m.Input)
	}
}

// TestInceptionV3ImageSizes checks the smallest input, torchvision's
// min_size (75, 75): at 75 the last modules run on a 1×1 grid, at 74
// Mixed_7a would have no room, which torch rejects too.
func TestInceptionV3ImageSizes(t *testing.T) {
	m, err := Describe("inceptionv3", Config{Image: 75})
	if err != nil {
		t.Fatalf("image 75: %v", err)
	}
	if got := m.Blocks[len(m.Blocks)-2].Out; !got.Equal(tensor.Shape{2048, 1, 1}) {
		t.Errorf("image 75: Mixed_7c output %v, want [2048 1 1]", got)
	}
	if got := m.Blocks[len(m.Blocks)-1].Out; !got.Equal(tensor.Shape{1000}) {
		t.Errorf("image 75: output %v, want [1000]", got)
	}
	// torchvision's hooks give 203,525,728 MACs at 75×75.
	if got, want := m.MACs(), int64(203_525_728); got != want {
		t.Errorf("image 75: MACs got %d, want %d", got, want)
	}
	if _, err := Describe("inceptionv3", Config{Image: 74}); err == nil || !strings.Contains(err.Error(), "75") {
		t.Errorf("image 74: got error %v, want one naming the smallest size, 75", err)
	}
}

// TestInceptionV3Names checks state_dict names and their order at both
// ends of the network and across one InceptionE.
func TestInceptionV3Names(t *testing.T) {
	m, err := Describe("inceptionv3", Config{})
	if err != nil {
		t.Fatal(err)
	}
	var params, buffers []string
	for _, p := range Params(m.Net) {
		params = append(params, p.Name)
	}
	for _, b := range Buffers(m.Net) {
		buffers = append(buffers, b.Name)
	}
	keys := inceptionStateDict(m.Net)
	tests := []struct {
		name string
		got  []string
		want []string
	}{
		{"first parameters", params[:5], []string{
			"Conv2d_1a_3x3.conv.weight", "Conv2d_1a_3x3.bn.weight", "Conv2d_1a_3x3.bn.bias",
			"Conv2d_2a_3x3.conv.weight", "Conv2d_2a_3x3.bn.weight",
		}},
		{"last parameters", params[len(params)-5:], []string{
			"Mixed_7c.branch_pool.conv.weight", "Mixed_7c.branch_pool.bn.weight", "Mixed_7c.branch_pool.bn.bias",
			"fc.weight", "fc.bias",
		}},
		{"first buffers", buffers[:4], []string{
			"Conv2d_1a_3x3.bn.running_mean", "Conv2d_1a_3x3.bn.running_var", "Conv2d_1a_3x3.bn.num_batches_tracked",
			"Conv2d_2a_3x3.bn.running_mean",
		}},
		{"last buffers", buffers[len(buffers)-4:], []string{
			"Mixed_7c.branch3x3dbl_3b.bn.num_batches_tracked",
			"Mixed_7c.branch_pool.bn.running_mean", "Mixed_7c.branch_pool.bn.running_var",
			"Mixed_7c.branch_pool.bn.num_batches_tracked",
		}},
		{"first state_dict entries", keys[:7], append(inceptionConvKeys("Conv2d_1a_3x3"), "Conv2d_2a_3x3.conv.weight")},
		{"last state_dict entries", keys[len(keys)-3:], []string{
			"Mixed_7c.branch_pool.bn.num_batches_tracked", "fc.weight", "fc.bias",
		}},
		{"Mixed_7b (InceptionE)", inceptionKeysUnder(keys, "Mixed_7b."), slices.Concat(
			inceptionConvKeys("Mixed_7b.branch1x1"),
			inceptionConvKeys("Mixed_7b.branch3x3_1"),
			inceptionConvKeys("Mixed_7b.branch3x3_2a"),
			inceptionConvKeys("Mixed_7b.branch3x3_2b"),
			inceptionConvKeys("Mixed_7b.branch3x3dbl_1"),
			inceptionConvKeys("Mixed_7b.branch3x3dbl_2"),
			inceptionConvKeys("Mixed_7b.branch3x3dbl_3a"),
			inceptionConvKeys("Mixed_7b.branch3x3dbl_3b"),
			inceptionConvKeys("Mixed_7b.branch_pool"),
		)},
		{"Mixed_6a (InceptionB)", inceptionKeysUnder(keys, "Mixed_6a."), slices.Concat(
			inceptionConvKeys("Mixed_6a.branch3x3"),
			inceptionConvKeys("Mixed_6a.branch3x3dbl_1"),
			inceptionConvKeys("Mixed_6a.branch3x3dbl_2"),
			inceptionConvKeys("Mixed_6a.branch3x3dbl_3"),
		)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if !slices.Equal(tc.got, tc.want) {
				t.Errorf("got  %q\nwant %q", tc.got, tc.want)
			}
		})
	}
	// The branch convolutions of Mixed_7b, with the kernels that tell
	// the 1×3 from the 3×1 (torchvision's concat order: 2a before 2b).
	kernels := map[string][2]int{}
	Walk(m.Net, func(path string, l Layer) {
		if c, ok := l.(*Conv2D); ok && strings.HasPrefix(path, "Mixed_7b.") {
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

// inceptionKeysUnder returns the keys that start with prefix, in order.
func inceptionKeysUnder(keys []string, prefix string) []string {
	var out []string
	for _, k := range keys {
		if strings.HasPrefix(k, prefix) {
			out = append(out, k)
		}
	}
	return out
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
			m, err := Describe("inceptionv3", Config{NoDropout: tc.noDropout})
			if err != nil {
				t.Fatal(err)
			}
			var pools []string
			convs, basics := 0, 0
			Walk(m.Net, func(path string, l Layer) {
				switch l := l.(type) {
				case *MaxPool2D:
					pools = append(pools, fmt.Sprintf("%s max %+v", path, l.P))
				case *AvgPool2D:
					pools = append(pools, fmt.Sprintf("%s avg %+v", path, l.P))
				case *AdaptiveAvgPool2D:
					pools = append(pools, fmt.Sprintf("%s adaptive %dx%d", path, l.OH, l.OW))
				case *Dropout:
					if path != "dropout" || l.P != tc.p {
						t.Errorf("dropout %q with p %v, want \"dropout\" with %v", path, l.P, tc.p)
					}
				case *Conv2D:
					convs++
				case *Sequential:
					if len(l.Layers) == 0 || l.Layers[0].Name != "conv" {
						return
					}
					basics++
					if len(l.Layers) != 3 {
						t.Errorf("%s: %d layers, want a BasicConv2d's 3", path, len(l.Layers))
						return
					}
					conv, _ := l.Layers[0].Layer.(*Conv2D)
					bn, _ := l.Layers[1].Layer.(*BatchNorm2D)
					_, relu := l.Layers[2].Layer.(*ReLU)
					if conv == nil || conv.Bias != nil || bn == nil || l.Layers[1].Name != "bn" ||
						bn.P != (tensor.BatchNormParams{Momentum: 0.1, Eps: 1e-3}) || !relu {
						t.Errorf("%s: not a BasicConv2d", path)
					}
				}
			})
			if convs != 94 || basics != 94 {
				t.Errorf("got %d convolutions in %d BasicConv2d's, want 94 in 94", convs, basics)
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

// TestInceptionV3TrainStep runs a training forward and backward of a
// narrow network (width 1/16) at the smallest input on the CPU device.
func TestInceptionV3TrainStep(t *testing.T) {
	dev := newDevice(t)
	rng := newRand(31)
	const batch, classes = 2, 5
	m, err := Build(dev, "inceptionv3", Config{Width: 1.0 / 16, Image: 75, Classes: classes}, rng)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		m.Release()
		checkNoLeak(t, dev)
	}()
	// Channels come out scaled and summed: 2048/16 = 128 into fc, as
	// 20 + (24+24) + (24+24) + 12 from Mixed_7c's branches.
	if got := m.Blocks[len(m.Blocks)-2].Out; !got.Equal(tensor.Shape{128, 1, 1}) {
		t.Errorf("Mixed_7c output: got %v, want [128 1 1]", got)
	}
	x, _ := uploadRand(dev, tensor.Boundary, rng, batch, 3, 75, 75)
	defer x.Release()
	p := &Pass{Dev: dev, Train: true, Grad: true, Seed: 1}
	y, ctx := m.Net.Forward(p, x)
	if !y.Shape().Equal(tensor.Shape{batch, classes}) {
		t.Fatalf("logits: got shape %v, want [%d %d]", y.Shape(), batch, classes)
	}
	loss, dy := CrossEntropy(p, y, []int32{1, 3}, 1.0/batch)
	if math.IsNaN(loss) || math.IsInf(loss, 0) || loss <= 0 {
		t.Errorf("loss: got %v, want a positive finite value", loss)
	}
	dx := m.Net.Backward(p, ctx, dy)
	if !dx.Shape().Equal(x.Shape()) {
		t.Errorf("dx: got shape %v, want %v", dx.Shape(), x.Shape())
	}
	y.Release()
	dy.Release()
	dx.Release()
	checkLive(t, dev, "activations after forward and backward", tensor.Activations, 0)
	checkLive(t, dev, "workspace after forward and backward", tensor.Workspace, 0)
	for _, np := range Params(m.Net) {
		if np.Param.Grad == nil {
			t.Errorf("%s: no gradient", np.Name)
			continue
		}
		g := host(np.Param.Grad)
		if maxAbs(g) == 0 || math.IsNaN(maxAbs(g)) || math.IsInf(maxAbs(g), 0) {
			t.Errorf("%s: gradient's largest magnitude is %v, want finite and nonzero", np.Name, maxAbs(g))
		}
	}
	for _, nb := range Buffers(m.Net) {
		if nb.Buffer.Count != nil && *nb.Buffer.Count != 1 {
			t.Errorf("%s: got %d, want 1 after one training forward", nb.Name, *nb.Buffer.Count)
		}
	}
}

// TestInceptionV3Init checks torchvision's initialisation: every
// convolution's and the classifier's weight from N(0, 0.1²) truncated to
// [−2, 2] (20 standard deviations, so its moments are the normal's to
// double precision), fc's bias uniform in ±1/√fan_in, batch norms at
// γ = 1, β = 0 with running mean 0 and variance 1.
func TestInceptionV3Init(t *testing.T) {
	dev := newDevice(t)
	m, err := Build(dev, "inceptionv3", Config{Width: 1.0 / 8, Image: 75, Classes: 10}, newRand(5))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		m.Release()
		checkNoLeak(t, dev)
	}()
	mean, std := truncNormalMoments(0, 0.1, -2, 2)
	var all []float32
	convs := 0
	for _, np := range Params(m.Net) {
		v := tensor.ToHost(np.Param.Value)
		switch {
		case strings.HasSuffix(np.Name, ".conv.weight") || np.Name == "fc.weight":
			convs++
			all = append(all, v...)
			// Each layer on its own, so that one left at torch's
			// default (uniform, std 1/√(3·fan_in)) shows.
			if err := momentErr(v, mean, std); err != nil {
				t.Errorf("%s: %v", np.Name, err)
			}
			for i, e := range v {
				if e < -2 || e > 2 {
					t.Errorf("%s[%d] = %v, outside [−2, 2]", np.Name, i, e)
					break
				}
			}
		case np.Name == "fc.bias":
			bound := 1 / math.Sqrt(float64(m.Blocks[len(m.Blocks)-2].Out[0]))
			if err := momentErr(v, 0, bound/math.Sqrt(3)); err != nil {
				t.Errorf("%s: %v", np.Name, err)
			}
			for i, e := range v {
				if math.Abs(float64(e)) > bound {
					t.Errorf("%s[%d] = %v, outside ±%v", np.Name, i, e, bound)
				}
			}
		case strings.HasSuffix(np.Name, ".bn.weight"):
			inceptionAllEqual(t, np.Name, v, 1)
		case strings.HasSuffix(np.Name, ".bn.bias"):
			inceptionAllEqual(t, np.Name, v, 0)
		default:
			t.Errorf("unexpected parameter %s", np.Name)
		}
	}
	if convs != 95 {
		t.Errorf("got %d convolution and linear weights, want 94 + 1", convs)
	}
	if err := momentErr(all, mean, std); err != nil {
		t.Errorf("all weights together (%d): %v", len(all), err)
	}
	for _, nb := range Buffers(m.Net) {
		switch {
		case strings.HasSuffix(nb.Name, ".running_mean"):
			inceptionAllEqual(t, nb.Name, tensor.ToHost(nb.Buffer.Value), 0)
		case strings.HasSuffix(nb.Name, ".running_var"):
			inceptionAllEqual(t, nb.Name, tensor.ToHost(nb.Buffer.Value), 1)
		case *nb.Buffer.Count != 0:
			t.Errorf("%s: got %d, want 0", nb.Name, *nb.Buffer.Count)
		}
	}
}

// inceptionAllEqual fails the test unless every element of v is want.
func inceptionAllEqual(t *testing.T, what string, v []float32, want float32) {
	t.Helper()
	for i, e := range v {
		if e != want {
			t.Errorf("%s[%d] = %v, want %v", what, i, e, want)
			return
		}
	}
}

// TestInceptionV3Gradients checks the whole network, at the smallest
// input and width 1/32 (22,657 parameters), against its float64 mirror in
// evaluation mode: output, input gradient and every parameter gradient.
// Evaluation mode, because in training mode the float32 network cannot
// be held to a tolerance that still means something: each of the up to
// 17 batch norms in a row normalises by batch statistics that it computes
// from its float32 input, and its backward projects the gradient onto
// the complement of that input's mean and direction, which cancels; over
// the whole network the error measured against the mirror was 5e-5 to
// 2e-4 of the largest gradient on most seeds, and up to 0.16 on some,
// where a ReLU input within 1e-5 of zero falls on the other side of the
// kink in float32 and a whole stem channel's statistics move with it. In
// evaluation mode a batch norm is affine and the worst error over twelve
// seeds was 6.9e-7 of the largest gradient. Training mode is checked
// block by block (TestInceptionV3BlockGradients) and as a whole for
// memory and completeness (TestInceptionV3TrainStep).
func TestInceptionV3Gradients(t *testing.T) {
	dev := newDevice(t)
	rng := newRand(47)
	m, err := Build(dev, "inceptionv3", Config{Width: 1.0 / 32, Image: 75, Classes: 3}, rng)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		m.Release()
		checkNoLeak(t, dev)
	}()
	randomizeParams(dev, m.Net, rng)
	samples := 48
	if testing.Short() {
		samples = 8
	}
	checkLayerSampled(t, dev, m.Net, Pass{}, tensor.Shape{2, 3, 75, 75}, rng, blockRTol, blockATol, samples)
}

// TestInceptionV3BlockGradients checks every block of a network of width
// 1/32 in training mode (dropout on in the head) against its float64
// mirror, on 7×7 inputs: large enough for every block (Mixed_6a and
// Mixed_7a need 3×3) and for batch statistics of at least eight values,
// small enough that the mirror's forwards are cheap.
func TestInceptionV3BlockGradients(t *testing.T) {
	dev := newDevice(t)
	rng := newRand(53)
	m, err := Build(dev, "inceptionv3", Config{Width: 1.0 / 32, Image: 75, Classes: 3}, rng)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		m.Release()
		checkNoLeak(t, dev)
	}()
	randomizeParams(dev, m.Net, rng)
	for i, bl := range m.Blocks {
		t.Run(bl.Name, func(t *testing.T) {
			in := tensor.Shape{2, bl.In[0], 7, 7}
			pass := Pass{Train: true, Seed: 5, Step: uint64(i)}
			checkLayerSampled(t, dev, bl.Layer, pass, in, rng, blockRTol, blockATol, 16)
		})
	}
}
