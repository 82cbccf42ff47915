package modeltest

import (
	"math/rand/v2"
	"reflect"

	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/tensor"
)

// Case describes one zoo model to Run: how to build it small, and the
// facts that are its own. Zero fields are not checked, or take the
// defaults their comments give.
//
// The suite runs CNNs, the mlp and language models alike; which one a
// model is, it asks the model (its Arch has Tokens: a language model),
// and the Case must agree (Full.Seq set for a language model alone). A
// language model's input is token ids below its vocabulary, its labels
// one a position, its logits [B, S, Vocab] and its loss the mean over
// the B·S positions; its classes are its vocabulary.
type Case struct {
	// Model is the zoo name, as models.Build takes it.
	Model string
	// Config is a small configuration (narrow, at a small input; a
	// language model's short sequence, small vocabulary and few layers)
	// that the subtests which run the model build at unless their own
	// field says otherwise, so that each takes well under a second.
	Config models.Config
	// Batch is the number of samples those subtests run (default 2:
	// training-mode batch norm needs more than one value per channel).
	Batch int

	// Full is what Describe gives at the reference configuration:
	// torchvision's network, or Hugging Face's model.
	Full Full
	// Sizes are other configurations and what Describe gives at them.
	Sizes []Size
	// Head names the parameters whose first dimension is the number of
	// classes — a language model's vocabulary: changing it changes
	// these (the token embedding and lm_head) and nothing else.
	Head []string
	// Names are the facts of the state_dict at the reference
	// configuration.
	Names Names
	// Init says how the reference library (torchvision, Hugging Face's
	// _init_weights) initialises the model.
	Init Init
	// Step tunes the training step against the float64 reference.
	Step Step
	// Grad tunes the gradient check of the whole network.
	Grad Grad
}

// Full is what Describe gives at the reference configuration,
// models.Config{}.
type Full struct {
	// Classes and Image are the defaults Describe fills in (Image 0 for a
	// model that takes flat vectors); both 0 for a language model, whose
	// classes are its Vocab.
	Classes, Image int
	// MinImage is the smallest input the network accepts (Arch.MinImage).
	MinImage int
	// Seq, Vocab and DecoderLayers are a language model's defaults of
	// Config's Seq, Vocab and Layers, its config.json's (GPT-2's
	// n_positions, vocab_size, n_layer), which Describe fills in; 0 for
	// any other model. Seq set is what makes the Case a language
	// model's.
	Seq, Vocab, DecoderLayers int
	// MaxSeq is the longest sequence a language model takes (its
	// learned positions; Arch.Tokens.MaxSeq), 0 for any length.
	MaxSeq int
	// Input is the shape of one sample.
	Input tensor.Shape
	// Params and MACs are the trainable scalars and the forward's
	// multiply-accumulates per sample.
	Params, MACs int64
	// ActivationBytes is what a training forward keeps per sample
	// (checked when nonzero).
	ActivationBytes int64
	// Blocks are the names of every block, in order.
	Blocks []string
	// Stages are costs and shapes of blocks or groups of blocks.
	Stages []Stage
	// Layers counts the layers of each kind in the network, by the Go
	// type's name without its package ("Conv2D").
	Layers map[string]int
}

// Stage is one block, or the blocks named Name+".…" (a torchvision
// top-level module such as resnet's "layer1", a transformer's
// "transformer.h"), with what they cost together.
type Stage struct {
	Name string
	// Out is the output shape of every block of the stage.
	Out tensor.Shape
	// Params and MACs are summed over the blocks.
	Params, MACs int64
	// OutputBytes and SavedBytes are summed over the blocks (checked
	// when nonzero).
	OutputBytes, SavedBytes int64
}

// Size is a configuration Describe accepts, and what it gives there, or
// one it refuses.
type Size struct {
	Name   string
	Config models.Config
	// Params and MACs are checked when nonzero.
	Params, MACs int64
	// Outs are block outputs by block name.
	Outs map[string]tensor.Shape
	// Err, when set, is part of the error Describe must return.
	Err string
}

// Names are the facts of the state_dict at the reference configuration.
type Names struct {
	// Params and Buffers count the parameters and buffers (a tied
	// parameter once).
	Params, Buffers int
	// Golden is the path of a file listing the reference library's
	// state_dict (torchvision's, Hugging Face's), one "name [shape]" line
	// per entry ("#" starts a comment), or "".
	Golden string
	// Slices are runs of names that must be as given.
	Slices []Slice
}

// List chooses the names a Slice is taken from.
type List int

// The lists of names.
const (
	ParamNames     List = iota // models.Params, in state_dict order
	BufferNames                // models.Buffers, in state_dict order
	StateDictNames             // models.StateDict: every module's parameters, then its buffers
)

// Slice is a run of names of a List: the len(Want) names from index At
// (negative: counted from the end), or, when Under is set, every name
// that starts with Under.
type Slice struct {
	What  string
	Of    List
	At    int
	Under string
	Want  []string
}

// Init says how the reference library initialises the model.
type Init struct {
	// Config is what to build at (Case.Config when zero): wide enough
	// that every tensor's sample tells the distribution from a wrong one.
	Config models.Config
	// Rule returns the distribution parameter param ("weight", "bias")
	// of layer l, at state_dict path path ("transformer.h.0.attn.c_proj"),
	// is drawn from: the path tells apart layers of one type that are
	// drawn differently, as GPT-2's c_proj. Batch norms it returns no
	// rule for are torch's default: γ = 1, β = 0. Every other parameter
	// needs one. A tied parameter is asked for once, at its first use.
	Rule func(path string, l models.Layer, param string) (Dist, bool)
}

// Step tunes the training step.
type Step struct {
	// Config is what to build at (Case.Config when zero).
	Config models.Config
	// Randomize, when set, changes the initial parameters before the
	// step: batch norms' or layer norms' γ and β away from 1 and 0,
	// which would hide their gradients' errors.
	Randomize func(dev tensor.Device, l models.Layer, rng *rand.Rand)
	// Seed seeds the generator that builds the model and draws the input
	// and labels (default 52), which the measurements that tolerances
	// quote were made with.
	Seed uint64
	// OutTol and GradTol replace StepOutTol and StepGradTol when set.
	OutTol, GradTol float64
	// LossNear, when set, is how far the loss may be from log(classes)
	// (a language model's log(vocab)): a network whose initial logits
	// are small starts there.
	LossNear float64
}

// Grad tunes the gradient check of the whole network (CheckLayer).
type Grad struct {
	// Config is what to build at (Case.Config when zero).
	Config models.Config
	// Pass is the mode to check in; its Dev and Grad are set by the
	// check.
	Pass models.Pass
	// Seed seeds the generator that builds the model, randomizes it and
	// draws the input (default 51).
	Seed uint64
	// Randomize gives the parameters the values the check runs at
	// (RandomizeParams when nil).
	Randomize func(dev tensor.Device, l models.Layer, rng *rand.Rand)
	// Samples is how many coordinates the reference is checked at
	// against central differences (0: every one).
	Samples int
	// Slow skips the check under -short; otherwise ShortSamples, when
	// set, replaces Samples there.
	Slow         bool
	ShortSamples int
	// Alive, when set, is the smallest fraction of the model's largest
	// gradient element each parameter's largest must reach (biases that
	// batch norm cancels excepted): with few channels a ReLU that zeroed
	// a whole layer would leave every gradient below it zero, and
	// trivially equal to the reference's.
	Alive float64
	// BlockImage, when set, also checks every block on its own, in
	// training mode, on images of this size (flat inputs and token
	// sequences as they are), with BlockSamples central differences.
	BlockImage, BlockSamples int
}

// or returns c, or def when c is the zero configuration.
func or(c, def models.Config) models.Config {
	if reflect.ValueOf(c).IsZero() {
		return def
	}
	return c
}

// batch returns the batch the subtests run.
func (c *Case) batch() int {
	if c.Batch == 0 {
		return 2
	}
	return c.Batch
}

// seed returns s, or def when s is 0.
func seed(s, def uint64) uint64 {
	if s == 0 {
		return def
	}
	return s
}
