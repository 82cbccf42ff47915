package cpu

import "github.com/pipecast/pipecast/tensor"

func (d *Device) LinearForward(x, w, bias, y *tensor.Tensor) { panic("cpu: not implemented") }

func (d *Device) LinearBackwardData(dy, w, dx *tensor.Tensor) { panic("cpu: not implemented") }

func (d *Device) LinearBackwardParams(x, dy, dw, dbias *tensor.Tensor) { panic("cpu: not implemented") }
