package models

import (
	"fmt"
	"strconv"

	"github.com/pipecast/pipecast/tensor"
)

// The mlp is the back-propagation network of the literature on training
// on SMP clusters: fully connected layers with ReLU between them, built
// as torch's nn.Sequential(Linear, ReLU, …, Linear), so its state_dict
// names are "0.weight", "0.bias", "2.weight", … Each linear layer with its
// ReLU is a block.
func init() {
	register(Arch{
		Name:        "mlp",
		Description: "fully connected back-propagation network (default 784-1024-1024-10)",
		defaults: func(c *Config) {
			if len(c.Sizes) == 0 {
				c.Sizes = []int{784, 1024, 1024, 10}
			}
			c.Sizes = append([]int(nil), c.Sizes...)
			if c.Classes == 0 {
				c.Classes = c.Sizes[len(c.Sizes)-1]
			}
			c.Sizes[len(c.Sizes)-1] = c.Classes
			c.Image = 0
		},
		build: buildMLP,
	})
}

func buildMLP(b *Builder) ([]*Block, error) {
	sizes := b.Config.Sizes
	if len(sizes) < 2 {
		return nil, fmt.Errorf("mlp sizes %v: need an input and an output size", sizes)
	}
	for _, s := range sizes {
		if s < 1 {
			return nil, fmt.Errorf("mlp sizes %v: every size must be at least 1", sizes)
		}
	}
	// The width multiplier scales hidden layers only: the input and the
	// classes are the data's.
	widths := append([]int(nil), sizes...)
	for i := 1; i < len(widths)-1; i++ {
		widths[i] = b.Channels(widths[i])
	}
	b.Input = tensor.Shape{widths[0]}
	var blocks []*Block
	for i := 0; i+1 < len(widths); i++ {
		name := strconv.Itoa(2 * i)
		children := []Child{{name, NewLinear(b.Dev, widths[i], widths[i+1], true, b.Rng)}}
		if i+2 < len(widths) {
			children = append(children, Child{strconv.Itoa(2*i + 1), NewReLU()})
		}
		blocks = append(blocks, b.Block(name, children...))
	}
	return blocks, nil
}
