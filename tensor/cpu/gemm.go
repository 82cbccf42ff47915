package cpu

import "github.com/pipecast/pipecast/tensor"

func (d *Device) Gemm(transA, transB bool, alpha float32, a, b *tensor.Tensor, beta float32, c *tensor.Tensor) {
	panic("cpu: not implemented")
}
