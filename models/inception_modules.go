package models

import "github.com/pipecast/pipecast/tensor"

// This file builds the parts of torchvision's Inception-v3
// (torchvision/models/inception.py): BasicConv2d and the modules
// InceptionA to InceptionE. Every constructor takes its input channels and
// returns the layer with its output channels, so that a width multiplier
// flows through: each convolution's output channels are torchvision's
// scaled by Builder.Channels, and a module's output is the sum of its
// branches'.
//
// Children carry the names of torchvision's submodules, so parameters come
// out as "Mixed_5b.branch5x5_1.conv.weight". A module's branches are
// Sequentials with empty names, because torchvision's branch convolutions
// are siblings, and the operations torchvision calls as functions
// (F.relu, F.avg_pool2d, F.max_pool2d, torch.cat) have empty names too;
// none of them holds parameters.

// inceptionBN are BasicConv2d's batch-norm settings: eps 0.001 as
// torchvision sets it, momentum torch's default 0.1.
var inceptionBN = tensor.BatchNormParams{Momentum: 0.1, Eps: 1e-3}

const (
	// inceptionInitStd is the standard deviation of torchvision's
	// trunc_normal_ initialisation of Inception-v3's convolutions and
	// classifier (its auxiliary head, not built here, uses others).
	inceptionInitStd = 0.1
	// inceptionInitBound is that truncated normal's bound: trunc_normal_
	// with a = −2, b = 2 truncates at ±2 absolutely, 20 standard
	// deviations, so in effect it is a plain normal.
	inceptionInitBound = 2
)

// inceptionGeom is the geometry of one BasicConv2d: kernel, stride
// (1 when zero) and padding.
type inceptionGeom struct {
	kh, kw, stride, padH, padW int
}

// The geometries torchvision's Inception-v3 uses.
var (
	inception1x1   = inceptionGeom{kh: 1, kw: 1}
	inception3x3   = inceptionGeom{kh: 3, kw: 3}
	inception3x3p1 = inceptionGeom{kh: 3, kw: 3, padH: 1, padW: 1}
	inception3x3s2 = inceptionGeom{kh: 3, kw: 3, stride: 2}
	inception5x5p2 = inceptionGeom{kh: 5, kw: 5, padH: 2, padW: 2}
	inception1x3   = inceptionGeom{kh: 1, kw: 3, padW: 1}
	inception3x1   = inceptionGeom{kh: 3, kw: 1, padH: 1}
	inception1x7   = inceptionGeom{kh: 1, kw: 7, padW: 3}
	inception7x1   = inceptionGeom{kh: 7, kw: 1, padH: 3}
)

// inceptionConv names one BasicConv2d of a branch and gives its output
// channels in torchvision's network (before the width multiplier).
type inceptionConv struct {
	name string
	out  int
	g    inceptionGeom
}

// inceptionBuilder adds Inception-v3's parts to a Builder.
type inceptionBuilder struct{ *Builder }

// basicConv returns torchvision's BasicConv2d from in channels to out
// scaled by the width: a convolution without bias ("conv") whose weight
// is drawn from trunc_normal_(0, 0.1, −2, 2), a batch norm ("bn") with
// γ = 1 and β = 0, and F.relu.
func (b inceptionBuilder) basicConv(in int, c inceptionConv) (Child, int) {
	out, g := b.Channels(c.out), c.g
	stride := max(g.stride, 1)
	conv := NewConv2D(b.Dev, Conv2DConfig{
		In: in, Out: out, KH: g.kh, KW: g.kw,
		StrideH: stride, StrideW: stride, PadH: g.padH, PadW: g.padW,
	}, nil) // nil: skip torch's default draw, which trunc_normal_ overwrites
	TruncatedNormal(b.Dev, conv.Weight.Value, 0, inceptionInitStd, -inceptionInitBound, inceptionInitBound, b.Rng)
	return Child{c.name, NewSequential(
		Child{"conv", conv},
		Child{"bn", NewBatchNorm2D(b.Dev, out, inceptionBN)},
		Child{"", NewReLU()},
	)}, out
}

// chain returns the BasicConv2d's of convs, each taking the previous
// one's output, as children of a branch.
func (b inceptionBuilder) chain(in int, convs ...inceptionConv) ([]Child, int) {
	children := make([]Child, len(convs))
	for i, c := range convs {
		children[i], in = b.basicConv(in, c)
	}
	return children, in
}

// branch is chain wrapped in an unnamed Sequential.
func (b inceptionBuilder) branch(in int, convs ...inceptionConv) (Child, int) {
	children, out := b.chain(in, convs...)
	return Child{"", NewSequential(children...)}, out
}

// avgPoolBranch is the pooling branch of InceptionA, C and E:
// F.avg_pool2d(x, 3, stride 1, padding 1), padding counted in the mean
// (torch's default), then the BasicConv2d "branch_pool".
func (b inceptionBuilder) avgPoolBranch(in, out int) (Child, int) {
	pool := NewAvgPool2D(tensor.Pool2DParams{KH: 3, KW: 3, StrideH: 1, StrideW: 1, PadH: 1, PadW: 1})
	conv, c := b.basicConv(in, inceptionConv{"branch_pool", out, inception1x1})
	return Child{"", NewSequential(Child{"", pool}, conv)}, c
}

// inceptionMaxPoolBranch is the pooling branch of InceptionB and D,
// F.max_pool2d(x, 3, stride 2), which keeps its input's channels.
func inceptionMaxPoolBranch(in int) (Child, int) {
	return Child{"", NewMaxPool2D(tensor.Pool2DParams{KH: 3, KW: 3, StrideH: 2, StrideW: 2})}, in
}

// inceptionBranches collects a module's branches in torch.cat order.
type inceptionBranches struct {
	children []Child
	channels int
}

func (bs *inceptionBranches) add(c Child, channels int) {
	bs.children = append(bs.children, c)
	bs.channels += channels
}

// concat returns the channel concatenation of the branches and its
// channels.
func (bs *inceptionBranches) concat() (Layer, int) {
	return NewConcat(bs.children...), bs.channels
}

// inceptionA is the 35×35 module (Mixed_5b–5d): 1×1; 1×1 then 5×5; 1×1
// then two 3×3; average pool then 1×1 to poolFeatures channels.
func (b inceptionBuilder) inceptionA(in, poolFeatures int) (Layer, int) {
	var bs inceptionBranches
	bs.add(b.basicConv(in, inceptionConv{"branch1x1", 64, inception1x1}))
	bs.add(b.branch(in,
		inceptionConv{"branch5x5_1", 48, inception1x1},
		inceptionConv{"branch5x5_2", 64, inception5x5p2}))
	bs.add(b.branch(in,
		inceptionConv{"branch3x3dbl_1", 64, inception1x1},
		inceptionConv{"branch3x3dbl_2", 96, inception3x3p1},
		inceptionConv{"branch3x3dbl_3", 96, inception3x3p1}))
	bs.add(b.avgPoolBranch(in, poolFeatures))
	return bs.concat()
}

// inceptionB is the grid reduction 35×35 → 17×17 (Mixed_6a): 3×3 of
// stride 2; 1×1, 3×3, then 3×3 of stride 2; max pool of stride 2.
func (b inceptionBuilder) inceptionB(in int) (Layer, int) {
	var bs inceptionBranches
	bs.add(b.basicConv(in, inceptionConv{"branch3x3", 384, inception3x3s2}))
	bs.add(b.branch(in,
		inceptionConv{"branch3x3dbl_1", 64, inception1x1},
		inceptionConv{"branch3x3dbl_2", 96, inception3x3p1},
		inceptionConv{"branch3x3dbl_3", 96, inception3x3s2}))
	bs.add(inceptionMaxPoolBranch(in))
	return bs.concat()
}

// inceptionC is the 17×17 module with factorised 7×7 convolutions
// (Mixed_6b–6e), with c7 channels inside its 7×7 branches.
func (b inceptionBuilder) inceptionC(in, c7 int) (Layer, int) {
	var bs inceptionBranches
	bs.add(b.basicConv(in, inceptionConv{"branch1x1", 192, inception1x1}))
	bs.add(b.branch(in,
		inceptionConv{"branch7x7_1", c7, inception1x1},
		inceptionConv{"branch7x7_2", c7, inception1x7},
		inceptionConv{"branch7x7_3", 192, inception7x1}))
	bs.add(b.branch(in,
		inceptionConv{"branch7x7dbl_1", c7, inception1x1},
		inceptionConv{"branch7x7dbl_2", c7, inception7x1},
		inceptionConv{"branch7x7dbl_3", c7, inception1x7},
		inceptionConv{"branch7x7dbl_4", c7, inception7x1},
		inceptionConv{"branch7x7dbl_5", 192, inception1x7}))
	bs.add(b.avgPoolBranch(in, 192))
	return bs.concat()
}

// inceptionD is the grid reduction 17×17 → 8×8 (Mixed_7a): 1×1 then
// 3×3 of stride 2; 1×1, 1×7, 7×1, then 3×3 of stride 2; max pool of
// stride 2.
func (b inceptionBuilder) inceptionD(in int) (Layer, int) {
	var bs inceptionBranches
	bs.add(b.branch(in,
		inceptionConv{"branch3x3_1", 192, inception1x1},
		inceptionConv{"branch3x3_2", 320, inception3x3s2}))
	bs.add(b.branch(in,
		inceptionConv{"branch7x7x3_1", 192, inception1x1},
		inceptionConv{"branch7x7x3_2", 192, inception1x7},
		inceptionConv{"branch7x7x3_3", 192, inception7x1},
		inceptionConv{"branch7x7x3_4", 192, inception3x3s2}))
	bs.add(inceptionMaxPoolBranch(in))
	return bs.concat()
}

// inceptionE is the 8×8 module with expanded filter banks (Mixed_7b,
// 7c): 1×1; 1×1 then a 1×3 and a 3×1 side by side; 1×1 and 3×3 then a
// 1×3 and a 3×1 side by side; average pool then 1×1.
func (b inceptionBuilder) inceptionE(in int) (Layer, int) {
	var bs inceptionBranches
	bs.add(b.basicConv(in, inceptionConv{"branch1x1", 320, inception1x1}))
	bs.add(b.forked(in, "branch3x3_2a", "branch3x3_2b",
		inceptionConv{"branch3x3_1", 384, inception1x1}))
	bs.add(b.forked(in, "branch3x3dbl_3a", "branch3x3dbl_3b",
		inceptionConv{"branch3x3dbl_1", 448, inception1x1},
		inceptionConv{"branch3x3dbl_2", 384, inception3x3p1}))
	bs.add(b.avgPoolBranch(in, 192))
	return bs.concat()
}

// forked is a branch of InceptionE: the BasicConv2d's of stem in order,
// then on their output a 1×3 (nameA) and a 3×1 (nameB) BasicConv2d of
// 384 channels, concatenated in that order.
func (b inceptionBuilder) forked(in int, nameA, nameB string, stem ...inceptionConv) (Child, int) {
	children, c := b.chain(in, stem...)
	var fork inceptionBranches
	fork.add(b.basicConv(c, inceptionConv{nameA, 384, inception1x3}))
	fork.add(b.basicConv(c, inceptionConv{nameB, 384, inception3x1}))
	joined, out := fork.concat()
	children = append(children, Child{"", joined})
	return Child{"", NewSequential(children...)}, out
}
