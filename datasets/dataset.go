package datasets

import "github.com/pipecast/pipecast/tensor"

// Dataset is a labelled set of samples of one shape, read into host
// memory.
type Dataset interface {
	// Name describes the set ("synthetic", "cifar10:/path", …).
	Name() string
	// Len returns the number of samples.
	Len() int
	// Shape returns one sample's shape: [C, H, W] for images.
	Shape() tensor.Shape
	// Classes returns the number of labels; labels are 0 … Classes−1.
	Classes() int
	// LabelsPerSample returns L, the number of labels of each sample: 1
	// for a set of classified samples, one a position for a sequence
	// whose every position is predicted.
	LabelsPerSample() int
	// Read writes sample indices[i] into x[i·n : (i+1)·n], n =
	// Shape().Numel(), and its L labels into labels[i·L : (i+1)·L].
	Read(indices []int, x []float32, labels []int32) error
}
