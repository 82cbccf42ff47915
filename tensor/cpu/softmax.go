package cpu

import "github.com/pipecast/pipecast/tensor"

func (d *Device) SoftmaxCrossEntropy(logits *tensor.Tensor, labels []int32, dlogits *tensor.Tensor, scale float32) float64 {
	panic("cpu: not implemented")
}
