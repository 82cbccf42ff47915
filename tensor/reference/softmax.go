package reference

import (
	"fmt"
	"math"
)

// SoftmaxCrossEntropy returns scale·Σ_i −log softmax(logits_i)[labels_i]
// over the n rows of logits [n, classes], and its gradient
// scale·(softmax − onehot(labels)). Each row's log-sum-exp is taken after
// subtracting the row's maximum, so no exponential overflows.
func SoftmaxCrossEntropy(logits []float64, n, classes int, labels []int32, scale float64) (loss float64, dlogits []float64) {
	if len(logits) != n*classes || len(labels) != n {
		panic(fmt.Sprintf("reference: softmax cross-entropy: %d logits and %d labels for %d rows of %d classes",
			len(logits), len(labels), n, classes))
	}
	dlogits = make([]float64, len(logits))
	for i := 0; i < n; i++ {
		row := logits[i*classes : (i+1)*classes]
		label := int(labels[i])
		if label < 0 || label >= classes {
			panic(fmt.Sprintf("reference: softmax cross-entropy: label %d outside [0, %d)", label, classes))
		}
		m := math.Inf(-1)
		for _, v := range row {
			m = math.Max(m, v)
		}
		sum := 0.0
		for _, v := range row {
			sum += math.Exp(v - m)
		}
		loss += scale * (math.Log(sum) + m - row[label])
		for j, v := range row {
			dlogits[i*classes+j] = scale * math.Exp(v-m) / sum
		}
		dlogits[i*classes+label] -= scale
	}
	return loss, dlogits
}
