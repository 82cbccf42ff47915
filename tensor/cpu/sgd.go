package cpu

import "github.com/pipecast/pipecast/tensor"

func (d *Device) SGDStep(w, g, buf *tensor.Tensor, p tensor.SGDParams, first bool) {
	panic("cpu: not implemented")
}
