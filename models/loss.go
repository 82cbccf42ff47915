package models

import (
	"fmt"

	"github.com/pipecast/pipecast/tensor"
)

// CrossEntropy returns scale·Σ_i −log softmax(logits_i)[labels_i] over
// the rows of logits [N, classes] and, with p.Grad, its gradient with
// respect to the logits (nil otherwise), owned by the caller. Scale 1/N
// is torch's nn.CrossEntropyLoss (mean reduction) on this batch; a
// pipeline training a mini-batch of B samples in micro-batches passes
// 1/B to each, so that the accumulated gradients equal the mini-batch's
// and the micro-batch losses sum to its loss.
func CrossEntropy(p *Pass, logits *tensor.Tensor, labels []int32, scale float32) (loss float64, dlogits *tensor.Tensor) {
	if logits.Rank() != 2 || logits.Dim(0) != len(labels) {
		panic(fmt.Sprintf("models: cross entropy: logits %v for %d labels", logits.Shape(), len(labels)))
	}
	for i, c := range labels {
		if c < 0 || int(c) >= logits.Dim(1) {
			panic(fmt.Sprintf("models: cross entropy: label %d of sample %d outside [0, %d)", c, i, logits.Dim(1)))
		}
	}
	if p.Grad {
		dlogits = p.Dev.Alloc(tensor.Activations, logits.Shape()...)
	}
	return p.Dev.SoftmaxCrossEntropy(logits, labels, dlogits, scale), dlogits
}
