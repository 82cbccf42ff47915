package models

import (
	"math"

	"github.com/pipecast/pipecast/tensor"
)

// Inception-v3 is torchvision's inception_v3(aux_logits=False,
// transform_input=False, init_weights=True) (Szegedy et al., "Rethinking
// the Inception Architecture for Computer Vision", CVPR 2016), with
// torchvision's state_dict names and initialisation: every convolution's
// and the classifier's weight from trunc_normal_(0, 0.1, −2, 2), the
// classifier's bias torch's default U(±1/√2048), batch norms γ = 1, β = 0
// with eps 0.001. Config.Width scales every convolution's output
// channels; fc takes whatever Mixed_7c's branches sum to.
//
// Its blocks are the stem's convolutions (Conv2d_1a_3x3 … Conv2d_4a_3x3),
// each Mixed module, and the head (avgpool, dropout, flatten, fc). The two
// max pools of the stem have no block of their own: maxpool1 ends the
// block of Conv2d_2b_3x3 and maxpool2 that of Conv2d_4a_3x3, since a
// pipeline boundary after a pooling sends a quarter of the data that one
// before it would.
func init() {
	register(Arch{
		Name:         "inceptionv3",
		Description:  "torchvision's Inception-v3 without the auxiliary head (23.8M parameters at 1000 classes)",
		DefaultImage: 299,
		// At 75 the grid that is 8×8 at 299 is 1×1; at 74 Mixed_6a
		// leaves a 2×2 grid, smaller than Mixed_7a's stride-2 3×3
		// kernels, which torch rejects too.
		MinImage: 75,
		defaults: func(c *Config) {
			if c.Classes == 0 {
				c.Classes = 1000
			}
			if c.Image == 0 {
				c.Image = 299
			}
		},
		build: buildInceptionV3,
	})
}

// inceptionStem lists the stem's BasicConv2d's in order.
var inceptionStem = []inceptionConv{
	{"Conv2d_1a_3x3", 32, inception3x3s2},
	{"Conv2d_2a_3x3", 32, inception3x3},
	{"Conv2d_2b_3x3", 64, inception3x3p1},
	{"Conv2d_3b_1x1", 80, inception1x1},
	{"Conv2d_4a_3x3", 192, inception3x3},
}

// inceptionStemPools names the stem's max pools (3×3, stride 2) by the
// convolution whose block they end.
var inceptionStemPools = map[string]string{
	"Conv2d_2b_3x3": "maxpool1",
	"Conv2d_4a_3x3": "maxpool2",
}

func buildInceptionV3(b *Builder) ([]*Block, error) {
	ib := inceptionBuilder{b}
	b.Input = tensor.Shape{3, b.Config.Image, b.Config.Image}
	var blocks []*Block
	c := 3
	for _, s := range inceptionStem {
		var conv Child
		conv, c = ib.basicConv(c, s)
		children := []Child{conv}
		if pool, ok := inceptionStemPools[s.name]; ok {
			children = append(children, Child{pool, NewMaxPool2D(tensor.Pool2DParams{KH: 3, KW: 3, StrideH: 2, StrideW: 2})})
		}
		blocks = append(blocks, b.Block(s.name, children...))
	}
	mixed := func(name string, l Layer, out int) {
		blocks = append(blocks, b.Block(name, Child{name, l}))
		c = out
	}
	for _, m := range []struct {
		name         string
		poolFeatures int
	}{{"Mixed_5b", 32}, {"Mixed_5c", 64}, {"Mixed_5d", 64}} {
		l, out := ib.inceptionA(c, m.poolFeatures)
		mixed(m.name, l, out)
	}
	l, out := ib.inceptionB(c)
	mixed("Mixed_6a", l, out)
	for _, m := range []struct {
		name string
		c7   int
	}{{"Mixed_6b", 128}, {"Mixed_6c", 160}, {"Mixed_6d", 160}, {"Mixed_6e", 192}} {
		l, out := ib.inceptionC(c, m.c7)
		mixed(m.name, l, out)
	}
	l, out = ib.inceptionD(c)
	mixed("Mixed_7a", l, out)
	for _, name := range []string{"Mixed_7b", "Mixed_7c"} {
		l, out := ib.inceptionE(c)
		mixed(name, l, out)
	}

	// torchvision's fc is Linear(2048, classes): 2048 is the last
	// module's output channels, which the width scales.
	fc := NewLinear(b.Dev, c, b.Config.Classes, true, nil)
	TruncatedNormal(b.Dev, fc.Weight.Value, 0, inceptionInitStd, -inceptionInitBound, inceptionInitBound, b.Rng)
	bound := 1 / math.Sqrt(float64(c))
	Uniform(b.Dev, fc.Bias.Value, -bound, bound, b.Rng)
	blocks = append(blocks, b.Block("head",
		Child{"avgpool", NewAdaptiveAvgPool2D(1, 1)},
		Child{"dropout", b.Dropout(0.5)},
		Child{"", NewFlatten()},
		Child{"fc", fc},
	))
	return blocks, nil
}
