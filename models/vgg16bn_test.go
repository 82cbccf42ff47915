package models

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

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
	vggStateDict  = 97 // 13 convs × 2 + 13 batch norms × 5 + 3 linears × 2
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

// vggBlockNames are the blocks in order: a conv-bn-relu triple named by
// its convolution, each max-pool, and the classifier's three linear
// layers.
var vggBlockNames = []string{
	"features.0", "features.3", "features.6",
	"features.7", "features.10", "features.13",
	"features.14", "features.17", "features.20", "features.23",
	"features.24", "features.27", "features.30", "features.33",
	"features.34", "features.37", "features.40", "features.43",
	"classifier.0", "classifier.3", "classifier.6",
}

func TestDescribeVGG16BN(t *testing.T) {
	m, err := Describe("vgg16bn", Config{})
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Params(); got != vggParams {
		t.Errorf("params: got %d, want %d", got, vggParams)
	}
	if got := int64(ParamCount(m.Net)); got != vggParams {
		t.Errorf("ParamCount: got %d, want %d", got, vggParams)
	}
	if got := len(Params(m.Net)) + len(Buffers(m.Net)); got != vggStateDict {
		t.Errorf("state_dict entries: got %d, want %d", got, vggStateDict)
	}
	if got := m.MACs(); got != vggMACs {
		t.Errorf("MACs: got %d, want %d", got, vggMACs)
	}
	if m.Config.Classes != 1000 || m.Config.Image != 224 || m.Config.Width != 1 {
		t.Errorf("defaults: got %+v, want 1000 classes, image 224, width 1", m.Config)
	}
	if !m.Input.Equal(tensor.Shape{3, 224, 224}) {
		t.Errorf("input: got %v, want [3 224 224]", m.Input)
	}
	var names []string
	for _, b := range m.Blocks {
		names = append(names, b.Name)
	}
	if strings.Join(names, " ") != strings.Join(vggBlockNames, " ") {
		t.Fatalf("blocks:\ngot  %v\nwant %v", names, vggBlockNames)
	}
	blocks := map[string]*Block{}
	for _, b := range m.Blocks {
		blocks[b.Name] = b
	}
	tests := []struct {
		name    string
		out     tensor.Shape
		params  int64
		macs    int64
		outSize int64
	}{
		{"features.0", tensor.Shape{64, 224, 224}, 3*64*9 + 64 + 2*64, 224 * 224 * 64 * 27, 4 * 64 * 224 * 224},
		{"features.6", tensor.Shape{64, 112, 112}, 0, 0, 4 * 64 * 112 * 112},
		{"features.40", tensor.Shape{512, 14, 14}, 512*512*9 + 512 + 2*512, 14 * 14 * 512 * 512 * 9, 4 * 512 * 14 * 14},
		{"features.43", tensor.Shape{512, 7, 7}, 0, 0, 4 * 512 * 7 * 7},
		{"classifier.0", tensor.Shape{4096}, 25088*4096 + 4096, 25088 * 4096, 4 * 4096},
		{"classifier.3", tensor.Shape{4096}, 4096*4096 + 4096, 4096 * 4096, 4 * 4096},
		{"classifier.6", tensor.Shape{1000}, 4096*1000 + 1000, 4096 * 1000, 4 * 1000},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := blocks[tc.name]
			if !b.Out.Equal(tc.out) {
				t.Errorf("output: got %v, want %v", b.Out, tc.out)
			}
			if b.Cost.Params != tc.params || b.Cost.MACs != tc.macs || b.Cost.OutputBytes != tc.outSize {
				t.Errorf("cost: got params %d, MACs %d, output bytes %d; want %d, %d, %d",
					b.Cost.Params, b.Cost.MACs, b.Cost.OutputBytes, tc.params, tc.macs, tc.outSize)
			}
		})
	}
}

// TestVGG16BNStateDictNames checks the first and last parameter and
// buffer names against torchvision's state_dict order (which interleaves
// each module's parameters and buffers; Params and Buffers list them
// apart, each in that order).
func TestVGG16BNStateDictNames(t *testing.T) {
	m, err := Describe("vgg16bn", Config{})
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
	tests := []struct {
		name        string
		got         []string
		count       int
		first, last []string
	}{
		{"parameters", params, 13*2 + 13*2 + 3*2,
			[]string{"features.0.weight", "features.0.bias", "features.1.weight", "features.1.bias", "features.3.weight"},
			[]string{"features.41.weight", "features.41.bias", "classifier.0.weight", "classifier.0.bias",
				"classifier.3.weight", "classifier.3.bias", "classifier.6.weight", "classifier.6.bias"}},
		{"buffers", buffers, 13 * 3,
			[]string{"features.1.running_mean", "features.1.running_var", "features.1.num_batches_tracked", "features.4.running_mean"},
			[]string{"features.38.num_batches_tracked", "features.41.running_mean", "features.41.running_var", "features.41.num_batches_tracked"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if len(tc.got) != tc.count {
				t.Fatalf("got %d names, want %d: %v", len(tc.got), tc.count, tc.got)
			}
			if got := tc.got[:len(tc.first)]; strings.Join(got, " ") != strings.Join(tc.first, " ") {
				t.Errorf("first: got %v, want %v", got, tc.first)
			}
			if got := tc.got[len(tc.got)-len(tc.last):]; strings.Join(got, " ") != strings.Join(tc.last, " ") {
				t.Errorf("last: got %v, want %v", got, tc.last)
			}
		})
	}
}

// vggShapes returns every parameter's shape by state_dict name.
func vggShapes(t *testing.T, cfg Config) (map[string]tensor.Shape, *Model) {
	t.Helper()
	m, err := Describe("vgg16bn", cfg)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]tensor.Shape{}
	for _, p := range Params(m.Net) {
		out[p.Name] = p.Param.Value.Shape()
	}
	return out, m
}

func TestVGG16BNConfigs(t *testing.T) {
	base, _ := vggShapes(t, Config{})

	t.Run("classes change only classifier.6", func(t *testing.T) {
		got, m := vggShapes(t, Config{Classes: 10})
		if m.Params() != vggParams10 {
			t.Errorf("params: got %d, want %d", m.Params(), vggParams10)
		}
		for name, s := range base {
			want := s
			switch name {
			case "classifier.6.weight":
				want = tensor.Shape{10, 4096}
			case "classifier.6.bias":
				want = tensor.Shape{10}
			}
			if !got[name].Equal(want) {
				t.Errorf("%s: got %v, want %v", name, got[name], want)
			}
		}
	})

	t.Run("width 0.5 halves channels and hidden widths", func(t *testing.T) {
		got, m := vggShapes(t, Config{Width: 0.5})
		if m.Params() != vggParamsHalf {
			t.Errorf("params: got %d, want %d", m.Params(), vggParamsHalf)
		}
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
	})

	tests := []struct {
		name  string
		image int
		macs  int64
	}{
		{"image 32, the smallest", 32, vggMACs32},
		{"image 40", 40, vggMACs40},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Describe("vgg16bn", Config{Image: tc.image})
			if err != nil {
				t.Fatal(err)
			}
			if got := m.MACs(); got != tc.macs {
				t.Errorf("MACs: got %d, want %d", got, tc.macs)
			}
			if got := m.Params(); got != vggParams {
				t.Errorf("params: got %d, want %d (the avgpool makes them independent of the image)", got, vggParams)
			}
			if got := m.Blocks[len(m.Blocks)-1].Out; !got.Equal(tensor.Shape{1000}) {
				t.Errorf("output: got %v, want [1000]", got)
			}
		})
	}

	errs := []struct {
		name string
		cfg  Config
	}{
		{"image 31, below five 2×2 pools", Config{Image: 31}},
		{"negative classes", Config{Classes: -1}},
		{"negative width", Config{Width: -0.5}},
	}
	for _, tc := range errs {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Describe("vgg16bn", tc.cfg); err == nil {
				t.Error("got no error")
			}
		})
	}
}

// TestVGG16BNTrainStep runs a training forward, the loss and a backward
// of a narrow VGG16-BN on the CPU device.
func TestVGG16BNTrainStep(t *testing.T) {
	dev := newDevice(t)
	const batch, classes = 2, 10
	m, err := Build(dev, "vgg16bn", Config{Width: 1.0 / 16, Image: 32, Classes: classes}, newRand(1))
	if err != nil {
		t.Fatal(err)
	}
	x, _ := uploadRand(dev, tensor.Boundary, newRand(2), batch, 3, 32, 32)
	p := &Pass{Dev: dev, Train: true, Grad: true, Seed: 7, Step: 1}
	y, ctx := m.Net.Forward(p, x)
	if !y.Shape().Equal(tensor.Shape{batch, classes}) {
		t.Fatalf("logits: got shape %v, want [%d %d]", y.Shape(), batch, classes)
	}
	loss, dy := CrossEntropy(p, y, []int32{3, 8}, 1.0/batch)
	// Logits start near zero (weights of std 0.01 in the classifier),
	// so the loss is near log(classes).
	if math.IsNaN(loss) || math.IsInf(loss, 0) || math.Abs(loss-math.Log(classes)) > 0.5 {
		t.Errorf("loss: got %v, want a finite value near log %d = %.3f", loss, classes, math.Log(classes))
	}
	y.Release()
	dx := m.Net.Backward(p, ctx, dy)
	dy.Release()
	if !dx.Shape().Equal(x.Shape()) {
		t.Errorf("dx: got shape %v, want %v", dx.Shape(), x.Shape())
	}
	dx.Release()
	x.Release()
	checkLive(t, dev, "activations after the step", tensor.Activations, 0)
	checkLive(t, dev, "workspace after the step", tensor.Workspace, 0)
	for _, np := range Params(m.Net) {
		if np.Param.Grad == nil {
			t.Errorf("%s: no gradient", np.Name)
			continue
		}
		g := host(np.Param.Grad)
		norm := math.Sqrt(dot(g, g))
		// Every gradient but a convolution's bias must be nonzero.
		if math.IsNaN(norm) || math.IsInf(norm, 0) || (norm == 0 && !vggBiasBeforeBN(np.Name)) {
			t.Errorf("%s: gradient norm %v", np.Name, norm)
		}
	}
	for _, nb := range Buffers(m.Net) {
		if c := nb.Buffer.Count; c != nil && *c != 1 {
			t.Errorf("%s: got %d, want 1 after one training forward", nb.Name, *c)
		}
	}
	m.Release()
	checkNoLeak(t, dev)
}

// vggConvs are the module names of the thirteen convolutions.
var vggConvs = []string{
	"features.0", "features.3", "features.7", "features.10", "features.14", "features.17", "features.20",
	"features.24", "features.27", "features.30", "features.34", "features.37", "features.40",
}

// vggBiasBeforeBN reports whether name is a convolution's bias: batch
// norm follows every convolution of VGG16-BN and subtracts the batch
// mean, so that bias's gradient is zero up to round-off.
func vggBiasBeforeBN(name string) bool {
	module, isBias := strings.CutSuffix(name, ".bias")
	return isBias && slices.Contains(vggConvs, module)
}

// TestVGG16BNGradients checks a whole tiny VGG16-BN, in training mode
// with dropout on, against its float64 mirror (checkLayer): output, input
// gradient, every parameter gradient and running statistics, and the
// mirror against central differences.
func TestVGG16BNGradients(t *testing.T) {
	if testing.Short() {
		t.Skip("central differences of the whole model take seconds")
	}
	dev := newDevice(t)
	rng := newRand(3)
	// checkLayer takes central differences of the float64 mirror for
	// every input element and every parameter, two forwards each, and
	// the 32×32 convolutions make a forward cost about half a
	// millisecond whatever the width. Width 1/256 (1, 1, 1, 2 and 2
	// channels in the five stages, hidden width 16: 2,243 parameters)
	// and batch 2 (6,144 input elements) keep that to a few seconds;
	// batch 2 still makes batch norm and dropout mix and key several
	// samples. The block tolerances hold for thirteen conv-bn-relu
	// layers because vggRandomize keeps every batch norm's 1/σ of order
	// one: the worst error measured is 4e-7 of the largest gradient, a
	// twenty-fifth of blockATol.
	m, err := Build(dev, "vgg16bn", Config{Width: 1.0 / 256, Image: 32, Classes: 3}, rng)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Release()
	if got, want := m.Params(), int64(2243); got != want {
		t.Errorf("params: got %d, want %d (torchvision's VGG at these widths)", got, want)
	}
	vggRandomize(dev, m.Net, rng)
	checkLayer(t, dev, m.Net, Pass{Train: true, Seed: 11, Step: 3, Sample: 4}, tensor.Shape{2, 3, 32, 32}, rng, blockRTol, blockATol)

	// The check is only as good as the gradients are alive: with one
	// channel per layer, a ReLU that zeroed a whole layer would leave
	// every gradient below it zero and trivially equal. Every gradient
	// but the convolutions' biases (which batch norm cancels) must be
	// of the order of the largest.
	largest := 0.0
	grads := map[string]float64{}
	for _, np := range Params(m.Net) {
		grads[np.Name] = maxAbs(host(np.Param.Grad))
		largest = max(largest, grads[np.Name])
	}
	for _, np := range Params(m.Net) {
		if !vggBiasBeforeBN(np.Name) && grads[np.Name] < 1e-3*largest {
			t.Errorf("%s: largest gradient element %.3g, under 1e-3 of the model's largest, %.3g", np.Name, grads[np.Name], largest)
		}
	}
}

// vggRandomize gives a deep network's parameters random values that keep
// its gradients of one order from the classifier to the first layer, so
// that checkLayer's tolerances, relative to the largest gradient, test
// every layer. randomizeParams's uniform [−1, 1) suits a block but not
// thirteen conv-bn-relu layers: a negative γ after a one-channel
// convolution lets the ReLU zero the whole layer, whose constant output
// the next batch norm then divides by √eps. Here weights are uniform with
// the variance that preserves activations through a ReLU (He et al.,
// ICCV 2015: 2/fan_in), γ is in [0.5, 1.5), biases and β are in
// [−0.5, 0.5), and the running statistics are randomizeParams's.
func vggRandomize(dev tensor.Device, l Layer, rng *rand.Rand) {
	randomizeParams(dev, l, rng)
	Walk(l, func(_ string, l Layer) {
		switch l := l.(type) {
		case *Conv2D:
			KaimingUniform(dev, l.Weight.Value, 0, FanIn, rng)
			Uniform(dev, l.Bias.Value, -0.5, 0.5, rng)
		case *Linear:
			KaimingUniform(dev, l.Weight.Value, 0, FanIn, rng)
			Uniform(dev, l.Bias.Value, -0.5, 0.5, rng)
		case *BatchNorm2D:
			Uniform(dev, l.Weight.Value, 0.5, 1.5, rng)
			Uniform(dev, l.Bias.Value, -0.5, 0.5, rng)
		}
	})
}

// TestVGG16BNInit checks VGG._initialize_weights's distributions on a
// quarter-width network: convolutions N(0, 2/fan_out) with fan_out =
// out·3·3, linear layers N(0, 0.01²), biases 0, batch norm γ 1 and β 0
// with fresh running statistics. momentErr allows 5 standard errors; the
// smallest tensor (features.0, 432 weights) still tells fan_out from
// torch's default uniform initialisation, whose std is a third of it, and
// the others tell fan_out from fan_in wherever the two differ.
func TestVGG16BNInit(t *testing.T) {
	dev := newDevice(t)
	m, err := Build(dev, "vgg16bn", Config{Width: 0.25}, newRand(4))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Release()
	const (
		conv = iota
		linear
		zero
		one
	)
	kinds := map[string]int{}
	Walk(m.Net, func(path string, l Layer) {
		switch l := l.(type) {
		case *Conv2D:
			kinds[path+".weight"], kinds[path+".bias"] = conv, zero
		case *Linear:
			kinds[path+".weight"], kinds[path+".bias"] = linear, zero
		case *BatchNorm2D:
			kinds[path+".weight"], kinds[path+".bias"] = one, zero
			if got := widen(tensor.ToHost(l.RunningMean.Value)); !allEqual(got, 0) {
				t.Errorf("%s.running_mean: got %v, want zeros", path, got)
			}
			if got := widen(tensor.ToHost(l.RunningVar.Value)); !allEqual(got, 1) {
				t.Errorf("%s.running_var: got %v, want ones", path, got)
			}
		}
	})
	var convs, linears int
	for _, np := range Params(m.Net) {
		v := tensor.ToHost(np.Param.Value)
		kind, ok := kinds[np.Name]
		switch {
		case !ok:
			t.Errorf("%s: not a parameter of a convolution, linear layer or batch norm", np.Name)
		case kind == conv:
			convs++
			_, fanOut := Fans(np.Param.Value.Shape())
			if err := momentErr(v, 0, math.Sqrt(2/float64(fanOut))); err != nil {
				t.Errorf("%s (fan_out %d): %v", np.Name, fanOut, err)
			}
		case kind == linear:
			linears++
			if err := momentErr(v, 0, 0.01); err != nil {
				t.Errorf("%s: %v", np.Name, err)
			}
		case kind == zero && !allEqual(widen(v), 0):
			t.Errorf("%s: got %v…, want zeros", np.Name, v[:min(len(v), 4)])
		case kind == one && !allEqual(widen(v), 1):
			t.Errorf("%s: got %v…, want ones", np.Name, v[:min(len(v), 4)])
		}
	}
	if convs != 13 || linears != 3 {
		t.Errorf("got %d convolution and %d linear weights, want 13 and 3", convs, linears)
	}
}

// allEqual reports whether every element of v is want.
func allEqual(v []float64, want float64) bool {
	for _, e := range v {
		if e != want {
			return false
		}
	}
	return true
}
