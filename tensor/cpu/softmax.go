package cpu

import (
	"math"

	"github.com/pipecast/pipecast/tensor"
)

// softmaxKeep is the most classes whose exponentials a softmax row keeps
// on its thread's stack (8 KB), enough for ImageNet's 1000.
const softmaxKeep = 1024

// SoftmaxCrossEntropy returns scale·Σ_i −log softmax(logits_i)[labels_i]
// over the rows of logits [N, classes] and, unless dlogits is nil, sets
// dlogits = scale·(softmax − onehot(labels)).
//
// Each row is shifted by its maximum before exponentiating, so no
// exponential exceeds 1 and none overflows whatever the logits' range;
// the exponentials, their sum and the log-sum-exp are float64, so the
// loss carries no float32 round-off beyond the logits' own.
func (d *Device) SoftmaxCrossEntropy(logits *tensor.Tensor, labels []int32, dlogits *tensor.Tensor, scale float32) float64 {
	const op = "softmax cross-entropy"
	n, classes := tensor.CrossEntropyDims(op, logits, labels)
	x := d.data(op, logits, logits.Len())
	var dx []float32
	if dlogits != nil {
		mustAgree(op, logits, dlogits)
		dx = d.data(op, dlogits, logits.Len())
	}
	s := float64(scale)
	// Each row's loss lands in its own slot and the slots are summed in
	// row order afterwards, so the result does not depend on how many
	// threads the device has.
	losses := make([]float64, n)
	d.pool.parallel(n, max(1, elementGrain/classes), func(lo, hi int) {
		// A row of up to softmaxKeep classes keeps its float64
		// exponentials here, so that the gradient reuses them instead of
		// calling exp again; each gradient is still rounded once, from
		// float64. Longer rows keep them in float32 in the gradient.
		var keep [softmaxKeep]float64
		for i := lo; i < hi; i++ {
			row := x[i*classes : (i+1)*classes]
			m := float64(row[0])
			for _, v := range row[1:] {
				m = max(m, float64(v))
			}
			var e []float64
			var long []float32 // a long row's exponentials, in its gradient
			if classes <= softmaxKeep {
				e = keep[:classes]
			} else if dx != nil {
				long = dx[i*classes : (i+1)*classes]
			}
			sum := 0.0
			for j, v := range row {
				ej := math.Exp(float64(v) - m)
				if e != nil {
					e[j] = ej
				} else if long != nil {
					long[j] = float32(ej)
				}
				sum += ej
			}
			label := int(labels[i])
			losses[i] = s * (math.Log(sum) - (float64(row[label]) - m))
			if dx == nil {
				continue
			}
			out := dx[i*classes : (i+1)*classes]
			if e != nil {
				out = out[:len(e)]
				for j, ej := range e {
					out[j] = float32(s * ej / sum)
				}
				out[label] = float32(s * (e[label]/sum - 1))
				continue
			}
			// The first pass left each exponential in out, rounded to
			// float32 (a relative error of 2⁻²⁴, well inside what the
			// gradient's own rounding allows): scaling them costs no
			// second exp, which at a language model's vocabulary of
			// tens of thousands is most of the loss's time.
			f := s / sum
			for j, v := range out {
				out[j] = float32(float64(v) * f)
			}
			out[label] = float32(s * (math.Exp(float64(row[label])-m)/sum - 1))
		}
	})
	total := 0.0
	for _, l := range losses {
		total += l
	}
	return total
}
