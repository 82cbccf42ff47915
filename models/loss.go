package models

import (
	"fmt"

	"github.com/pipecast/pipecast/tensor"
)

// CrossEntropy returns scale·Σ_i −log softmax(logits_i)[labels_i] over
// the rows of logits and, with p.Grad, its gradient with respect to the
// logits (nil otherwise), shaped as logits and owned by the caller.
// Logits are [N, classes], or [N, L, classes] for samples labelled at L
// positions each (a language model's next tokens): one row a label.
// Scale 1/rows is torch's nn.CrossEntropyLoss (mean reduction) on this
// batch; a pipeline training a mini-batch of B samples in micro-batches
// passes 1/(B·L) to each, so that the accumulated gradients equal the
// mini-batch's and the micro-batch losses sum to its loss.
func CrossEntropy(p *Pass, logits *tensor.Tensor, labels []int32, scale float32) (loss float64, dlogits *tensor.Tensor) {
	if logits.Rank() < 2 || logits.Len() != len(labels)*logits.Dim(logits.Rank()-1) {
		panic(fmt.Sprintf("models: cross entropy: logits %v for %d labels", logits.Shape(), len(labels)))
	}
	if logits.Rank() > 2 {
		rows := logits.Reshape(len(labels), logits.Dim(logits.Rank()-1))
		defer rows.Release()
		loss, dl := CrossEntropy(p, rows, labels, scale)
		if dl != nil {
			shaped := dl.Reshape(logits.Shape()...)
			dl.Release()
			dl = shaped
		}
		return loss, dl
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
