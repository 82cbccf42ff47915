package cpu

import "github.com/pipecast/pipecast/tensor"

func (d *Device) ReLUForward(x, y *tensor.Tensor) { panic("cpu: not implemented") }

func (d *Device) ReLUBackward(y, dy, dx *tensor.Tensor) { panic("cpu: not implemented") }
