package datasets

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/pipecast/pipecast/tensor"
)

// DefaultSyntheticSamples is the size of the set "synthetic" opens: enough
// for several distinct batches of the usual sizes, and cheap, since
// synthetic samples are generated when read.
const DefaultSyntheticSamples = 1024

// Input describes what a model takes, for Open to check data against.
type Input struct {
	// Shape is one sample's shape: [C, H, W] for images, [F] for flat
	// vectors, [S] for a sequence of S tokens.
	Shape tensor.Shape
	// Classes is the number of outputs a label selects among: a
	// language model's vocabulary.
	Classes int
	// Tokens is set for a model of token sequences (a language model):
	// a sample is Shape[0] token ids in [0, Classes) as float32 values,
	// and each position's label is the token that follows it.
	Tokens bool
}

// Open returns the dataset a command-line spec names, checked against
// the model's input in:
//
//	synthetic     Synthetic(shape, classes, DefaultSyntheticSamples, seed),
//	              or for a model of tokens SyntheticTokens(S, classes, …)
//	synthetic:N   the same with N samples
//	cifar10:DIR   OpenCIFAR10Dir(DIR), the five training batches
//	mnist:DIR     OpenMNISTDir(DIR), the training set, gzipped or not
//	text:FILE     OpenText(FILE, S), the file's bytes as tokens, for a
//	              model of tokens with a vocabulary of at least 256
//
// An empty spec means "synthetic". Images (cifar10, mnist) are for
// models of images or flat vectors, text for models of tokens. The data's
// sample shape must equal the model's, except that a flat model input
// [F] accepts samples of any shape with F elements (images for an mlp):
// the returned set then presents its samples as [F]. The data's classes
// must be at most the model's, so that every label has an output.
func Open(spec string, in Input, seed uint64) (Dataset, error) {
	shape := in.Shape
	if len(shape) == 0 || !shape.Valid() {
		return nil, fmt.Errorf("open dataset %q: model input shape %v", spec, shape)
	}
	if in.Classes <= 0 {
		return nil, fmt.Errorf("open dataset %q: model has %d classes", spec, in.Classes)
	}
	if in.Tokens {
		return openTokens(spec, in, seed)
	}
	kind, arg, hasArg := strings.Cut(spec, ":")
	var ds Dataset
	var err error
	switch kind {
	case "", "synthetic":
		samples, err := syntheticSamples(spec, arg, hasArg)
		if err != nil {
			return nil, err
		}
		return Synthetic(shape, in.Classes, samples, seed), nil
	case "cifar10", "mnist":
		if arg == "" {
			return nil, fmt.Errorf("open dataset %q: want %s:DIR", spec, kind)
		}
		if kind == "cifar10" {
			ds, err = OpenCIFAR10Dir(arg)
		} else {
			ds, err = OpenMNISTDir(arg)
		}
		if err != nil {
			return nil, fmt.Errorf("open dataset %q: %w", spec, err)
		}
	case "text":
		return nil, fmt.Errorf("open dataset %q: text is token sequences, for a language model; this model takes samples of shape %v", spec, shape)
	default:
		return nil, unknownKind(spec, kind)
	}
	if ds.Classes() > in.Classes {
		return nil, fmt.Errorf("open dataset %q: %d classes do not fit a model with %d outputs", spec, ds.Classes(), in.Classes)
	}
	return fitShape(spec, ds, shape)
}

// openTokens is Open for a model of token sequences.
func openTokens(spec string, in Input, seed uint64) (Dataset, error) {
	if len(in.Shape) != 1 {
		return nil, fmt.Errorf("open dataset %q: a model of token sequences takes samples of shape [S], not %v", spec, in.Shape)
	}
	if in.Classes > MaxVocab {
		return nil, fmt.Errorf("open dataset %q: a vocabulary of %d: token ids above %d are not exact as float32", spec, in.Classes, MaxVocab)
	}
	seq := in.Shape[0]
	kind, arg, hasArg := strings.Cut(spec, ":")
	switch kind {
	case "", "synthetic":
		samples, err := syntheticSamples(spec, arg, hasArg)
		if err != nil {
			return nil, err
		}
		return SyntheticTokens(seq, in.Classes, samples, seed), nil
	case "text":
		if arg == "" {
			return nil, fmt.Errorf("open dataset %q: want text:FILE", spec)
		}
		if in.Classes < byteVocab {
			return nil, fmt.Errorf("open dataset %q: text is byte-level, %d tokens, more than the model's vocabulary of %d", spec, byteVocab, in.Classes)
		}
		ds, err := OpenText(arg, seq)
		if err != nil {
			return nil, fmt.Errorf("open dataset %q: %w", spec, err)
		}
		return ds, nil
	case "cifar10", "mnist":
		return nil, fmt.Errorf("open dataset %q: %s is images; a model of token sequences takes synthetic, synthetic:N or text:FILE", spec, kind)
	default:
		return nil, unknownKind(spec, kind)
	}
}

// syntheticSamples returns the sample count of a synthetic spec:
// DefaultSyntheticSamples, or N of synthetic:N.
func syntheticSamples(spec, arg string, hasArg bool) (int, error) {
	if !hasArg {
		return DefaultSyntheticSamples, nil
	}
	samples, err := strconv.Atoi(arg)
	if err != nil || samples <= 0 {
		return 0, fmt.Errorf("open dataset %q: sample count %q is not a positive integer", spec, arg)
	}
	return samples, nil
}

func unknownKind(spec, kind string) error {
	return fmt.Errorf("open dataset %q: unknown kind %q (want synthetic, synthetic:N, cifar10:DIR, mnist:DIR or text:FILE)", spec, kind)
}

// fitShape returns ds if its samples have the model's input shape, ds seen
// as flat samples if the model is flat and the sizes agree, and an error
// otherwise.
func fitShape(spec string, ds Dataset, shape tensor.Shape) (Dataset, error) {
	got := ds.Shape()
	switch {
	case got.Equal(shape):
		return ds, nil
	case len(shape) == 1 && got.Numel() == shape[0]:
		return flattened{ds}, nil
	case len(shape) == 1:
		return nil, fmt.Errorf("open dataset %q: samples %v have %d elements, the flat model input %v wants %d",
			spec, got, got.Numel(), shape, shape[0])
	default:
		return nil, fmt.Errorf("open dataset %q: samples %v do not match the model input %v", spec, got, shape)
	}
}

// flattened presents a set's samples as flat vectors; the data is the
// same, in the same order.
type flattened struct{ Dataset }

// Shape returns [F], F the number of elements of the set's samples.
func (f flattened) Shape() tensor.Shape { return tensor.Shape{f.Dataset.Shape().Numel()} }
