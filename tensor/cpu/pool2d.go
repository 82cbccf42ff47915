package cpu

import "github.com/pipecast/pipecast/tensor"

func (d *Device) MaxPool2DForward(x, y *tensor.Tensor, p tensor.Pool2DParams) {
	panic("cpu: not implemented")
}

func (d *Device) MaxPool2DBackward(x, dy, dx *tensor.Tensor, p tensor.Pool2DParams) {
	panic("cpu: not implemented")
}

func (d *Device) AvgPool2DForward(x, y *tensor.Tensor, p tensor.Pool2DParams) {
	panic("cpu: not implemented")
}

func (d *Device) AvgPool2DBackward(dy, dx *tensor.Tensor, p tensor.Pool2DParams) {
	panic("cpu: not implemented")
}

func (d *Device) AdaptiveAvgPool2DForward(x, y *tensor.Tensor) { panic("cpu: not implemented") }

func (d *Device) AdaptiveAvgPool2DBackward(dy, dx *tensor.Tensor) { panic("cpu: not implemented") }
