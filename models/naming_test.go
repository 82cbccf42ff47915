package models

import (
	"slices"
	"testing"

	"github.com/pipecast/pipecast/tensor"
)

// bnNames returns the buffer names of a batch norm at path.
func bnNames(path string) []string {
	return []string{path + ".running_mean", path + ".running_var", path + ".num_batches_tracked"}
}

// TestStateDictNames checks that containers name parameters and buffers
// as torch's state_dict does, in its order: Seq numbers its children,
// named children add a component, and empty names add none (torchvision's
// Inception branches, the Bottleneck's main path).
func TestStateDictNames(t *testing.T) {
	dev := newDevice(t)
	rng := newRand(12)
	tests := []struct {
		name    string
		layer   Layer
		params  []string
		buffers []string
		count   int
	}{
		{
			name:    "sequential",
			layer:   smallSequential(dev, rng),
			params:  []string{"0.weight", "0.bias", "1.weight", "1.bias", "5.weight", "5.bias"},
			buffers: bnNames("1"),
			count:   4*3*3*3 + 4 + 4 + 4 + 36*5 + 5,
		},
		{
			name:  "inceptionE-like concat",
			layer: smallInceptionE(dev, rng),
			params: []string{
				"branch1x1.conv.weight", "branch1x1.bn.weight", "branch1x1.bn.bias",
				"branch3x3_1.conv.weight", "branch3x3_1.bn.weight", "branch3x3_1.bn.bias",
				"branch3x3_2a.conv.weight", "branch3x3_2a.bn.weight", "branch3x3_2a.bn.bias",
				"branch3x3_2b.conv.weight", "branch3x3_2b.bn.weight", "branch3x3_2b.bn.bias",
				"branch_pool.conv.weight", "branch_pool.bn.weight", "branch_pool.bn.bias",
			},
			buffers: slices.Concat(bnNames("branch1x1.bn"), bnNames("branch3x3_1.bn"),
				bnNames("branch3x3_2a.bn"), bnNames("branch3x3_2b.bn"), bnNames("branch_pool.bn")),
			count: (4*3 + 6) + (4*3 + 6) + (3*2*3 + 4) + (3*2*3 + 4) + (4*2 + 4),
		},
		{
			name:  "layer1 of two blocks: bottleneck with downsample, basic block",
			layer: NewSequential(Child{"layer1", Seq(smallBottleneck(dev, rng, 6, 3, 8), smallBasicBlock(dev, rng, 8))}),
			params: []string{
				"layer1.0.conv1.weight", "layer1.0.bn1.weight", "layer1.0.bn1.bias",
				"layer1.0.conv2.weight", "layer1.0.bn2.weight", "layer1.0.bn2.bias",
				"layer1.0.conv3.weight", "layer1.0.bn3.weight", "layer1.0.bn3.bias",
				"layer1.0.downsample.0.weight", "layer1.0.downsample.1.weight", "layer1.0.downsample.1.bias",
				"layer1.1.conv1.weight", "layer1.1.bn1.weight", "layer1.1.bn1.bias",
				"layer1.1.conv2.weight", "layer1.1.bn2.weight", "layer1.1.bn2.bias",
			},
			buffers: slices.Concat(bnNames("layer1.0.bn1"), bnNames("layer1.0.bn2"), bnNames("layer1.0.bn3"),
				bnNames("layer1.0.downsample.1"), bnNames("layer1.1.bn1"), bnNames("layer1.1.bn2")),
			count: (6*3 + 6) + (3*3*9 + 6) + (3*8 + 16) + (6*8 + 16) + 2*(8*8*9+16),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			defer ReleaseLayer(tc.layer)
			var params, buffers []string
			for _, p := range Params(tc.layer) {
				params = append(params, p.Name)
			}
			for _, b := range Buffers(tc.layer) {
				buffers = append(buffers, b.Name)
			}
			if !slices.Equal(params, tc.params) {
				t.Errorf("parameters:\ngot  %q\nwant %q", params, tc.params)
			}
			if !slices.Equal(buffers, tc.buffers) {
				t.Errorf("buffers:\ngot  %q\nwant %q", buffers, tc.buffers)
			}
			if got := ParamCount(tc.layer); got != tc.count {
				t.Errorf("ParamCount: got %d, want %d", got, tc.count)
			}
		})
	}
	checkNoLeak(t, dev)
}

// TestOutShapeErrors checks that layers explain the inputs they cannot
// take, that containers say where, and that Forward panics on them.
func TestOutShapeErrors(t *testing.T) {
	dev := newDevice(t)
	rng := newRand(13)
	conv := NewConv2D(dev, Conv2DConfig{In: 3, Out: 4, KH: 3, KW: 3, StrideH: 1, StrideW: 1}, rng)
	lin := NewLinear(dev, 8, 2, true, rng)
	bn := NewBatchNorm2D(dev, 4, tensor.DefaultBatchNorm())
	pool := NewMaxPool2D(tensor.Pool2DParams{KH: 3, KW: 3, StrideH: 2, StrideW: 2})
	same := NewMaxPool2D(tensor.Pool2DParams{KH: 3, KW: 3, StrideH: 1, StrideW: 1})
	tests := []struct {
		name  string
		layer Layer
		in    tensor.Shape
		want  tensor.Shape // nil when an error is expected
	}{
		{"conv2d", conv, tensor.Shape{2, 3, 5, 6}, tensor.Shape{2, 4, 3, 4}},
		{"conv2d with the wrong channels", conv, tensor.Shape{2, 4, 5, 5}, nil},
		{"conv2d on an input smaller than its kernel", conv, tensor.Shape{2, 3, 2, 5}, nil},
		{"strided conv2d on an input smaller than its kernel", NewConv2D(dev, Conv2DConfig{In: 1, Out: 1, KH: 3, KW: 1, StrideH: 2, StrideW: 2}, rng), tensor.Shape{1, 1, 2, 5}, nil},
		{"strided conv2d whose padding makes room", NewConv2D(dev, Conv2DConfig{In: 1, Out: 1, KH: 3, KW: 1, StrideH: 2, StrideW: 2, PadH: 1}, rng), tensor.Shape{1, 1, 1, 5}, tensor.Shape{1, 1, 1, 3}},
		{"conv2d on [N, C]", conv, tensor.Shape{2, 3}, nil},
		{"linear", lin, tensor.Shape{5, 8}, tensor.Shape{5, 2}},
		{"linear with the wrong features", lin, tensor.Shape{5, 7}, nil},
		{"batchnorm with the wrong channels", bn, tensor.Shape{2, 3, 4, 4}, nil},
		{"batchnorm of rank 3", bn, tensor.Shape{2, 4, 4}, nil},
		{"maxpool on an input smaller than its window", pool, tensor.Shape{1, 1, 2, 9}, nil},
		{"adaptive avgpool", NewAdaptiveAvgPool2D(1, 1), tensor.Shape{2, 7, 3, 3}, tensor.Shape{2, 7, 1, 1}},
		{"flatten", NewFlatten(), tensor.Shape{2, 3, 4, 5}, tensor.Shape{2, 60}},
		{"sequential", Seq(conv, NewFlatten(), lin), tensor.Shape{1, 3, 3, 4}, tensor.Shape{1, 2}},
		{"sequential failing in its last layer", Seq(conv, NewFlatten(), lin), tensor.Shape{1, 3, 4, 4}, nil},
		{"concat of branches with other spatial sizes", NewConcat(Child{"a", conv}, Child{"b", NewReLU()}), tensor.Shape{1, 3, 5, 5}, nil},
		{"concat", NewConcat(Child{"a", Seq(conv, bn)}, Child{"b", same}), tensor.Shape{1, 3, 5, 5}, tensor.Shape{1, 7, 3, 3}},
		{"residual whose paths disagree", NewResidual(Child{"", conv}, Child{}, nil), tensor.Shape{1, 3, 5, 5}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.layer.OutShape(tc.in)
			if tc.want != nil {
				if err != nil || !got.Equal(tc.want) {
					t.Errorf("OutShape(%v): got %v, %v, want %v", tc.in, got, err, tc.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("OutShape(%v): got %v, want an error", tc.in, got)
			}
			x := dev.Alloc(tensor.Boundary, tc.in...)
			defer x.Release()
			mustPanic(t, "Forward", "models: ", func() { tc.layer.Forward(&Pass{Dev: dev, Train: true}, x) })
		})
	}
	for _, tc := range tests {
		ReleaseLayer(tc.layer) // releasing a layer twice is harmless
	}
	checkLive(t, dev, "activations", tensor.Activations, 0)
	checkNoLeak(t, dev)
}
