package cpu

import "github.com/pipecast/pipecast/tensor"

func (d *Device) Conv2DForward(x, w, bias, y *tensor.Tensor, p tensor.Conv2DParams) {
	panic("cpu: not implemented")
}

func (d *Device) Conv2DBackwardData(dy, w, dx *tensor.Tensor, p tensor.Conv2DParams) {
	panic("cpu: not implemented")
}

func (d *Device) Conv2DBackwardFilter(x, dy, dw, dbias *tensor.Tensor, p tensor.Conv2DParams) {
	panic("cpu: not implemented")
}
