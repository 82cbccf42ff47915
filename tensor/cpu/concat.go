package cpu

import "github.com/pipecast/pipecast/tensor"

func (d *Device) ConcatChannels(dst *tensor.Tensor, srcs []*tensor.Tensor) {
	panic("cpu: not implemented")
}

func (d *Device) SplitChannels(src *tensor.Tensor, dsts []*tensor.Tensor) {
	panic("cpu: not implemented")
}
