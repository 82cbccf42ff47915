package cpu

import "github.com/pipecast/pipecast/tensor"

func (d *Device) BatchNormTrain(x, gamma, beta, y, runMean, runVar, saveMean, saveInvStd *tensor.Tensor, p tensor.BatchNormParams) {
	panic("cpu: not implemented")
}

func (d *Device) BatchNormEval(x, gamma, beta, runMean, runVar, y *tensor.Tensor, p tensor.BatchNormParams) {
	panic("cpu: not implemented")
}

func (d *Device) BatchNormBackward(x, dy, gamma, saveMean, saveInvStd, dx, dgamma, dbeta *tensor.Tensor) {
	panic("cpu: not implemented")
}
