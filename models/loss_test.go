package models

import (
	"testing"

	"github.com/pipecast/pipecast/tensor"
	"github.com/pipecast/pipecast/tensor/reference"
)

// lossRTol bounds the cross-entropy loss against the reference: both sum
// in float64 from the same float32 logits, so they differ only in the
// order of a dozen float64 terms and in exp/log's last bits, about 1e-15
// relative; 1e-12 leaves room for a less exact exponential.
const lossRTol = 1e-12

func TestCrossEntropy(t *testing.T) {
	dev := newDevice(t)
	rng := newRand(10)
	const n, classes = 4, 5
	logits, lv := uploadRand(dev, tensor.Boundary, rng, n, classes)
	defer logits.Release()
	labels := []int32{3, 0, 4, 4}

	p := &Pass{Dev: dev, Train: true, Grad: true}
	loss, dlogits := CrossEntropy(p, logits, labels, 1.0/n)
	wantLoss, wantD := reference.SoftmaxCrossEntropy(lv, n, classes, labels, 1.0/n)
	compare(t, "loss (mean)", []float64{loss}, []float64{wantLoss}, lossRTol, 0)
	compare(t, "dlogits", host(dlogits), wantD, layerRTol, layerATol)
	if dlogits.Category() != tensor.Activations {
		t.Errorf("dlogits in %s, want activations", dlogits.Category())
	}
	dlogits.Release()

	// Micro-batches of a mini-batch of n samples pass scale 1/n: their
	// losses add up to the mini-batch's and their gradients are its rows.
	var sum float64
	var rows []float64
	for _, half := range [][2]int{{0, 2}, {2, 4}} {
		part := logits.Slice(half[0], half[1])
		l, d := CrossEntropy(p, part, labels[half[0]:half[1]], 1.0/n)
		sum += l
		rows = append(rows, host(d)...)
		part.Release()
		d.Release()
	}
	compare(t, "sum of micro-batch losses", []float64{sum}, []float64{wantLoss}, lossRTol, 0)
	compare(t, "micro-batch dlogits", rows, wantD, layerRTol, layerATol)

	// Without Grad there is no gradient and nothing is allocated.
	loss, dlogits = CrossEntropy(&Pass{Dev: dev}, logits, labels, 1)
	if dlogits != nil {
		t.Error("CrossEntropy without Grad returned a gradient")
	}
	compare(t, "loss (sum)", []float64{loss}, []float64{wantLoss * n}, lossRTol, 0)
	checkLive(t, dev, "activations", tensor.Activations, 0)

	mustPanic(t, "a label out of range", "label 5 of sample 1", func() {
		CrossEntropy(p, logits, []int32{0, 5, 0, 0}, 1)
	})
	mustPanic(t, "too few labels", "for 3 labels", func() { CrossEntropy(p, logits, labels[:3], 1) })
}
