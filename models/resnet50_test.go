package models

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/pipecast/pipecast/tensor"
)

// TestDescribeResNet50 checks torchvision's resnet50() at its defaults:
// parameter and state_dict counts, the forward's multiply-accumulates,
// and the blocks' names and shapes.
func TestDescribeResNet50(t *testing.T) {
	m, err := Describe("resnet50", Config{})
	if err != nil {
		t.Fatal(err)
	}
	// sum(p.numel() for p in resnet50().parameters()) and
	// len(resnet50().state_dict()) in torchvision 0.14.
	if got, want := m.Params(), int64(25_557_032); got != want {
		t.Errorf("params: got %d, want %d", got, want)
	}
	if got, want := len(Params(m.Net))+len(Buffers(m.Net)), 320; got != want {
		t.Errorf("state_dict entries: got %d, want %d", got, want)
	}
	// Counted with forward hooks on torchvision's resnet50 over a
	// 224×224 input: output elements × in-channels × k² for every
	// nn.Conv2d plus in × out for the nn.Linear, 4,089,184,256 in all,
	// the 4.09 GFLOPS torchvision lists for the model (its "FLOPS" are
	// multiply-accumulates).
	if got, want := m.MACs(), int64(4_089_184_256); got != want {
		t.Errorf("MACs per sample: got %d, want %d", got, want)
	}
	var names []string
	for _, b := range m.Blocks {
		names = append(names, b.Name)
	}
	wantNames := "stem layer1.0 layer1.1 layer1.2 layer2.0 layer2.1 layer2.2 layer2.3 " +
		"layer3.0 layer3.1 layer3.2 layer3.3 layer3.4 layer3.5 layer4.0 layer4.1 layer4.2 head"
	if got := strings.Join(names, " "); got != wantNames {
		t.Errorf("blocks: got %s, want %s", got, wantNames)
	}
	if len(m.Blocks) != 18 {
		t.Fatalf("got %d blocks, want 18", len(m.Blocks))
	}
	if want := (tensor.Shape{3, 224, 224}); !m.Input.Equal(want) || !m.Blocks[0].In.Equal(want) {
		t.Errorf("input: got %v (block 0: %v), want %v", m.Input, m.Blocks[0].In, want)
	}
	// The parameters and forward MACs of torchvision's top-level
	// modules, summed over the blocks of each.
	stages := []struct {
		name   string
		out    tensor.Shape
		params int64
		macs   int64
	}{
		{"stem", tensor.Shape{64, 56, 56}, 9408 + 128, 118_013_952},
		{"layer1", tensor.Shape{256, 56, 56}, 215_808, 667_942_912},
		{"layer2", tensor.Shape{512, 28, 28}, 1_219_584, 1_027_604_480},
		{"layer3", tensor.Shape{1024, 14, 14}, 7_098_368, 1_464_336_384},
		{"layer4", tensor.Shape{2048, 7, 7}, 14_964_736, 809_238_528},
		{"head", tensor.Shape{1000}, 2_049_000, 2_048_000},
	}
	for _, s := range stages {
		var params, macs int64
		for _, b := range m.Blocks {
			if b.Name != s.name && !strings.HasPrefix(b.Name, s.name+".") {
				continue
			}
			params += b.Cost.Params
			macs += b.Cost.MACs
			if !b.Out.Equal(s.out) {
				t.Errorf("block %s: output %v, want %v", b.Name, b.Out, s.out)
			}
		}
		if params != s.params || macs != s.macs {
			t.Errorf("%s: got %d params and %d MACs, want %d and %d", s.name, params, macs, s.params, s.macs)
		}
	}
}

// TestResNet50Names checks state_dict names and order against
// torchvision's named_parameters() and named_buffers().
func TestResNet50Names(t *testing.T) {
	m, err := Describe("resnet50", Config{})
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
	if len(params) != 161 || len(buffers) != 159 {
		t.Fatalf("got %d parameters and %d buffers, want 161 and 159", len(params), len(buffers))
	}
	tests := []struct {
		name  string
		got   []string
		wants []string
	}{
		{"first parameters", params[:8], []string{
			"conv1.weight", "bn1.weight", "bn1.bias", "layer1.0.conv1.weight", "layer1.0.bn1.weight",
			"layer1.0.bn1.bias", "layer1.0.conv2.weight", "layer1.0.bn2.weight"}},
		{"layer1.0's last parameters", params[10:16], []string{
			"layer1.0.bn3.weight", "layer1.0.bn3.bias", "layer1.0.downsample.0.weight",
			"layer1.0.downsample.1.weight", "layer1.0.downsample.1.bias", "layer1.1.conv1.weight"}},
		{"last parameters", params[155:], []string{
			"layer4.2.bn2.bias", "layer4.2.conv3.weight", "layer4.2.bn3.weight", "layer4.2.bn3.bias",
			"fc.weight", "fc.bias"}},
		{"first buffers", buffers[:7], []string{
			"bn1.running_mean", "bn1.running_var", "bn1.num_batches_tracked", "layer1.0.bn1.running_mean",
			"layer1.0.bn1.running_var", "layer1.0.bn1.num_batches_tracked", "layer1.0.bn2.running_mean"}},
		{"layer1.0's downsample buffers", buffers[12:16], []string{
			"layer1.0.downsample.1.running_mean", "layer1.0.downsample.1.running_var",
			"layer1.0.downsample.1.num_batches_tracked", "layer1.1.bn1.running_mean"}},
		{"last buffers", buffers[155:], []string{
			"layer4.2.bn2.num_batches_tracked", "layer4.2.bn3.running_mean", "layer4.2.bn3.running_var",
			"layer4.2.bn3.num_batches_tracked"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got, want := strings.Join(tc.got, " "), strings.Join(tc.wants, " "); got != want {
				t.Errorf("got %s, want %s", got, want)
			}
		})
	}
	// Only the first Bottleneck of each stage has a downsample: it
	// changes the channels (and, after layer1, the resolution).
	for _, b := range m.Blocks[1:17] {
		has := false
		for _, p := range Params(b.Layer) {
			has = has || strings.HasPrefix(p.Name, b.Name+".downsample.")
		}
		if want := strings.HasSuffix(b.Name, ".0"); has != want {
			t.Errorf("%s: has a downsample %v, want %v", b.Name, has, want)
		}
	}
}

// TestResNet50Structure checks the layers themselves, which parameter
// names and counts do not pin down: every convolution's kernel, stride
// and padding, where the ReLUs are, the pools and the head.
func TestResNet50Structure(t *testing.T) {
	m, err := Describe("resnet50", Config{})
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
	var convs, relus, residuals int
	var seq []string
	Walk(m.Net, func(path string, l Layer) {
		switch l := l.(type) {
		case *Conv2D:
			convs++
			c := l.Cfg
			got := fmt.Sprintf("%dx%d stride %d pad %d", c.KH, c.KW, c.StrideH, c.PadH)
			want, ok := wantConvs[path]
			if !ok {
				want = "1x1 stride 1 pad 0"
			}
			if got != want || c.StrideW != c.StrideH || c.PadW != c.PadH || c.Bias {
				t.Errorf("%s: got %s (%+v), want %s without bias", path, got, c, want)
			}
		case *ReLU:
			relus++
		case *Residual:
			residuals++
			main, ok := l.Main.Layer.(*Sequential)
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
			if _, ok := l.Post.(*ReLU); !ok {
				t.Errorf("%s: post is %T, want a ReLU after the sum", path, l.Post)
			}
		case *MaxPool2D:
			p := l.P
			seq = append(seq, fmt.Sprintf("%s maxpool %dx%d stride %d pad %d", path, p.KH, p.KW, p.StrideH, p.PadH))
		case *AdaptiveAvgPool2D:
			seq = append(seq, fmt.Sprintf("%s adaptiveavgpool %dx%d", path, l.OH, l.OW))
		case *Flatten:
			seq = append(seq, "flatten")
		case *Linear:
			seq = append(seq, fmt.Sprintf("%s linear %d→%d bias %v", path, l.In, l.Out, l.Bias != nil))
		}
	})
	// One ReLU in the stem and three per Bottleneck, as torchvision
	// applies them.
	if convs != 53 || relus != 49 || residuals != 16 {
		t.Errorf("got %d convolutions, %d ReLUs and %d residual blocks, want 53, 49 and 16", convs, relus, residuals)
	}
	want := "maxpool maxpool 3x3 stride 2 pad 1; avgpool adaptiveavgpool 1x1; flatten; fc linear 2048→1000 bias true"
	if got := strings.Join(seq, "; "); got != want {
		t.Errorf("pools and head: got %s, want %s", got, want)
	}
}

// TestResNet50Classes checks that the number of classes changes fc only.
func TestResNet50Classes(t *testing.T) {
	full, err := Describe("resnet50", Config{})
	if err != nil {
		t.Fatal(err)
	}
	small, err := Describe("resnet50", Config{Classes: 10})
	if err != nil {
		t.Fatal(err)
	}
	a, b := Params(full.Net), Params(small.Net)
	if len(a) != len(b) {
		t.Fatalf("got %d parameters with 10 classes, want %d", len(b), len(a))
	}
	for i := range a {
		sa, sb := a[i].Param.Value.Shape(), b[i].Param.Value.Shape()
		var want tensor.Shape
		switch a[i].Name {
		case "fc.weight":
			want = tensor.Shape{10, 2048}
		case "fc.bias":
			want = tensor.Shape{10}
		default:
			want = sa
		}
		if b[i].Name != a[i].Name || !sb.Equal(want) {
			t.Errorf("parameter %d: got %s %v, want %s %v", i, b[i].Name, sb, a[i].Name, want)
		}
	}
	if got, want := full.Params()-small.Params(), int64(990*2049); got != want {
		t.Errorf("params with 1000 classes minus with 10: got %d, want %d", got, want)
	}
}

// TestResNet50MinImage checks the smallest input: every layer that
// shrinks its input maps 1×1 to 1×1, as torchvision's resnet50 does
// (it trains on a batch of two 1×1 images), and nothing smaller builds.
func TestResNet50MinImage(t *testing.T) {
	a, err := LookupArch("resnet50")
	if err != nil {
		t.Fatal(err)
	}
	if a.MinImage != 1 || a.DefaultImage != 224 {
		t.Errorf("got MinImage %d and DefaultImage %d, want 1 and 224", a.MinImage, a.DefaultImage)
	}
	m, err := Describe("resnet50", Config{Image: a.MinImage})
	if err != nil {
		t.Fatalf("image %d: %v", a.MinImage, err)
	}
	for _, b := range m.Blocks[:17] {
		if b.Out[1] != 1 || b.Out[2] != 1 {
			t.Errorf("image 1: block %s gives %v, want 1×1", b.Name, b.Out)
		}
	}
	if _, err := m.Net.OutShape(tensor.Shape{1, 3, a.MinImage - 1, a.MinImage - 1}); err == nil {
		t.Errorf("OutShape of a %d×%d input: got no error", a.MinImage-1, a.MinImage-1)
	}
	if _, err := Describe("resnet50", Config{Image: -1}); err == nil {
		t.Error("image -1: got no error")
	}
	// Sizes are ceil(s/2) after each of the five stride-2 layers.
	for _, tc := range []struct {
		name      string
		image     int
		layer4Out int
	}{{"224", 224, 7}, {"32", 32, 1}, {"33", 33, 2}, {"65", 65, 3}} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Describe("resnet50", Config{Image: tc.image, Width: 1.0 / 64})
			if err != nil {
				t.Fatal(err)
			}
			if got := m.Blocks[16].Out; got[1] != tc.layer4Out || got[2] != tc.layer4Out {
				t.Errorf("layer4 output %v, want %d×%d", got, tc.layer4Out, tc.layer4Out)
			}
		})
	}
}

// TestResNet50TrainStep runs a training forward and backward of a narrow
// resnet50 on the CPU device, with a cross-entropy loss.
func TestResNet50TrainStep(t *testing.T) {
	dev := newDevice(t)
	rng := newRand(50)
	const batch, image, classes = 2, 32, 10
	m, err := Build(dev, "resnet50", Config{Width: 1.0 / 16, Image: image, Classes: classes}, rng)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Release()
	// Width 1/16 leaves 4 channels in the stem and planes 4, 8, 16, 32.
	if got, want := m.Blocks[16].Out, (tensor.Shape{128, 1, 1}); !got.Equal(want) {
		t.Errorf("layer4 output: got %v, want %v", got, want)
	}
	x, _ := uploadRand(dev, tensor.Boundary, rng, batch, 3, image, image)
	defer x.Release()
	p := &Pass{Dev: dev, Train: true, Grad: true}
	y, ctx := m.Net.Forward(p, x)
	if want := (tensor.Shape{batch, classes}); !y.Shape().Equal(want) {
		t.Fatalf("logits: got %v, want %v", y.Shape(), want)
	}
	loss, dy := CrossEntropy(p, y, []int32{3, 7}, 1.0/batch)
	if math.IsNaN(loss) || math.IsInf(loss, 0) || loss <= 0 {
		t.Errorf("loss: got %v, want a positive finite value", loss)
	}
	dx := m.Net.Backward(p, ctx, dy)
	if !dx.Shape().Equal(x.Shape()) {
		t.Errorf("dx: got %v, want %v", dx.Shape(), x.Shape())
	}
	y.Release()
	dy.Release()
	dx.Release()
	checkLive(t, dev, "activations after the step", tensor.Activations, 0)
	checkLive(t, dev, "workspace after the step", tensor.Workspace, 0)
	for _, np := range Params(m.Net) {
		g := np.Param.Grad
		if g == nil || !g.Shape().Equal(np.Param.Value.Shape()) {
			t.Errorf("%s: no gradient of shape %v", np.Name, np.Param.Value.Shape())
			continue
		}
		for _, v := range host(g) {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Errorf("%s: gradient element %v", np.Name, v)
				break
			}
		}
	}
	// The head's gradients cannot vanish: fc gets the softmax error
	// times the pooled features directly.
	for _, np := range Params(m.Net)[159:] {
		if maxAbs(host(np.Param.Grad)) == 0 {
			t.Errorf("%s: gradient is zero", np.Name)
		}
	}
	for _, nb := range Buffers(m.Net) {
		if c := nb.Buffer.Count; c != nil && *c != 1 {
			t.Errorf("%s: got %d, want 1", nb.Name, *c)
		}
	}
}

// TestResNet50GradientCheck checks a whole tiny resnet50 (one channel in
// the stem, planes 1, 2, 4, 8) with checkLayer: forward and every
// gradient against its float64 mirror, and the mirror against central
// differences. It runs in evaluation mode, batch norm with (randomised)
// running statistics. In training mode every batch norm makes each later
// activation depend on every parameter before it, so that a step of
// checkLayer's size moves thousands of ReLU and max-pool inputs and some
// cross a kink (an error of up to 4% measured at width 1/64, image 33);
// and the running statistics after sixteen batch norms in series exceed
// the single-layer tolerance checkLayer holds them to.
// TestResNet50TrainingGradients covers that mode against the mirror.
func TestResNet50GradientCheck(t *testing.T) {
	if testing.Short() {
		t.Skip("central differences of the whole model take seconds")
	}
	dev := newDevice(t)
	rng := newRand(51)
	m, err := Build(dev, "resnet50", Config{Width: 1.0 / 64, Image: 16, Classes: 3}, rng)
	if err != nil {
		t.Fatal(err)
	}
	randomizeParams(dev, m.Net, rng)
	checkLayer(t, dev, m.Net, Pass{}, tensor.Shape{2, 3, 16, 16}, rng, blockRTol, blockATol)
	m.Release()
	checkNoLeak(t, dev)
}

// Tolerances of TestResNet50TrainingGradients, in compareScaled's form
// with rtol 0: |got − want| ≤ tol·scale. Sixteen training-mode batch
// norms in series each divide by the standard deviation of as few as
// eight values, which amplifies the rounding of the layers before them,
// by how much depends on the draw: over 24 runs (8 seeds each at width
// 1/64 with images 33 and 65 and at width 1/32 with image 33) the worst
// errors were 17 to 64 times those of the seed the test uses.
const (
	// resNetTrainOutTol bounds the float32 logits (scale: the largest
	// logit) and running statistics (scale: 1, the order of a batch
	// norm's input, a normalised activation or a sum of a few) after a
	// training forward of a tiny resnet50 against its float64 mirror.
	// The worst errors measured were 2.5e-4 of the largest logit and
	// 2.1e-4 in a running statistic (1.5e-5 and 8.7e-6 for the test's
	// seed).
	resNetTrainOutTol = 1e-3
	// resNetTrainGradTol bounds dx and the parameter gradients, scale the
	// largest gradient of the model. The gradients of the first layers
	// are sums over every position of the batch of terms that cancel
	// after the batch norms' backwards subtract their means: the worst
	// errors measured were 7.7e-4 of the largest gradient in dx and
	// 3.4e-3 in conv1.weight's gradient (1.2e-5 and 5.6e-5 for the test's
	// seed). An error of structure, a missing shortcut or batch-norm
	// term, is of the order of the gradient itself.
	resNetTrainGradTol = 1e-2
)

// TestResNet50TrainingGradients checks a tiny resnet50 in training mode
// against its float64 mirror: the logits, the running statistics, dx and
// every parameter gradient. The mirror's training-mode backwards are
// checked against central differences layer by layer, and the whole
// mirror in evaluation mode by TestResNet50GradientCheck.
func TestResNet50TrainingGradients(t *testing.T) {
	dev := newDevice(t)
	rng := newRand(52)
	// Image 33 leaves layer4 2×2, so that its batch norms normalise
	// eight values per channel; at 32 they would see two, whose
	// normalised values are ±1 whatever the input.
	const image = 33
	m, err := Build(dev, "resnet50", Config{Width: 1.0 / 64, Image: image, Classes: 3}, rng)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Release()
	// torchvision's initial weights, but batch-norm affine parameters
	// away from γ = 1, β = 0.
	Walk(m.Net, func(_ string, l Layer) {
		if bn, ok := l.(*BatchNorm2D); ok {
			Uniform(dev, bn.Weight.Value, 0.5, 1.5, rng)
			Uniform(dev, bn.Bias.Value, -0.5, 0.5, rng)
		}
	})
	in, out := tensor.Shape{2, 3, image, image}, tensor.Shape{2, 3}
	x, xv := uploadRand(dev, tensor.Boundary, rng, in...)
	defer x.Release()
	dy, dyv := uploadRand(dev, tensor.Boundary, rng, out...)
	defer dy.Release()

	p := &Pass{Dev: dev, Train: true, Grad: true}
	ref := newRefModel(*p, m.Net)
	y, ctx := m.Net.Forward(p, x)
	defer y.Release()
	compareScaled(t, "y", host(y), ref.forward(refTensor{in, xv}).v, 0, resNetTrainOutTol, 0)
	for _, nb := range Buffers(m.Net) {
		if b := nb.Buffer; b.Value != nil {
			compareScaled(t, nb.Name, host(b.Value), ref.bufs[b], 0, resNetTrainOutTol, 1)
		} else if *b.Count != 1 || ref.counts[b] != 1 {
			t.Errorf("%s: got %d (mirror %d), want 1", nb.Name, *b.Count, ref.counts[b])
		}
	}
	dx := m.Net.Backward(p, ctx, dy)
	defer dx.Release()
	rdx := ref.backward(refTensor{out, dyv})
	floor := maxAbs(rdx.v)
	for _, g := range ref.grads {
		floor = max(floor, maxAbs(g))
	}
	compareScaled(t, "dx", host(dx), rdx.v, 0, resNetTrainGradTol, floor)
	for _, np := range Params(m.Net) {
		compareScaled(t, "gradient of "+np.Name, host(np.Param.Grad), ref.grads[np.Param], 0, resNetTrainGradTol, floor)
	}
}

// TestResNet50Init checks torchvision's initialisation: every convolution
// N(0, 2/fan_out), fan_out = out·k² (kaiming_normal_, mode "fan_out",
// nonlinearity "relu"); batch norms γ = 1, β = 0 with fresh running
// statistics; fc torch's default, U(±1/√fan_in) for weight and bias.
func TestResNet50Init(t *testing.T) {
	dev := newDevice(t)
	m, err := Build(dev, "resnet50", Config{Width: 0.25, Image: 32}, newRand(53))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Release()
	convs := 0
	Walk(m.Net, func(path string, l Layer) {
		switch l := l.(type) {
		case *Conv2D:
			convs++
			if l.Bias != nil {
				t.Errorf("%s: has a bias", path)
			}
			c := l.Cfg
			std := math.Sqrt(2 / float64(c.Out*c.KH*c.KW))
			resNetNormalSample(t, path+".weight", host(l.Weight.Value), std)
		case *BatchNorm2D:
			for _, v := range []struct {
				name string
				t    *tensor.Tensor
				want float64
			}{
				{"weight", l.Weight.Value, 1}, {"bias", l.Bias.Value, 0},
				{"running_mean", l.RunningMean.Value, 0}, {"running_var", l.RunningVar.Value, 1},
			} {
				for _, e := range host(v.t) {
					if e != v.want {
						t.Errorf("%s.%s: element %v, want %v", path, v.name, e, v.want)
						break
					}
				}
			}
		case *Linear:
			bound := 1 / math.Sqrt(float64(l.In))
			resNetUniformSample(t, path+".weight", host(l.Weight.Value), bound)
			resNetUniformSample(t, path+".bias", host(l.Bias.Value), bound)
		}
	})
	if convs != 53 {
		t.Errorf("got %d convolutions, want 53", convs)
	}
}

// resNetNormalSample fails the test unless v looks drawn from N(0, std²):
// its mean within 5 standard errors (std/√n) of 0, and its root mean
// square within 5 standard errors (std/√(2n)) of std.
func resNetNormalSample(t *testing.T, what string, v []float64, std float64) {
	t.Helper()
	n := float64(len(v))
	var sum, sq float64
	for _, e := range v {
		sum += e
		sq += e * e
	}
	if mean := sum / n; math.Abs(mean) > 5*std/math.Sqrt(n) {
		t.Errorf("%s: mean %.3g of %d values, want 0 ± %.3g", what, mean, len(v), 5*std/math.Sqrt(n))
	}
	if rms := math.Sqrt(sq / n); math.Abs(rms-std) > 5*std/math.Sqrt(2*n) {
		t.Errorf("%s: root mean square %.4g of %d values, want %.4g ± %.3g", what, rms, len(v), std, 5*std/math.Sqrt(2*n))
	}
}

// resNetUniformSample fails the test unless v looks drawn from U(±bound):
// every value inside, and the mean square within 5 standard errors
// (√(4/45)·bound²/√n) of bound²/3.
func resNetUniformSample(t *testing.T, what string, v []float64, bound float64) {
	t.Helper()
	sq := 0.0
	for _, e := range v {
		if math.Abs(e) > bound {
			t.Errorf("%s: value %v outside ±%v", what, e, bound)
			return
		}
		sq += e * e
	}
	n := float64(len(v))
	se := math.Sqrt(4.0/45) * bound * bound / math.Sqrt(n)
	if ms := sq / n; math.Abs(ms-bound*bound/3) > 5*se {
		t.Errorf("%s: mean square %.4g of %d values, want %.4g ± %.3g", what, ms, len(v), bound*bound/3, 5*se)
	}
}
