package cpu

import "github.com/pipecast/pipecast/tensor"

func (d *Device) DropoutForward(x, y *tensor.Tensor, p float32, key tensor.DropoutKey) {
	panic("cpu: not implemented")
}

func (d *Device) DropoutBackward(dy, dx *tensor.Tensor, p float32, key tensor.DropoutKey) {
	panic("cpu: not implemented")
}
