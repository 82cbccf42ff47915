package tensor

// BatchNormReLUTrain is BatchNormTrain followed by y = max(y, 0) on dev:
// one fused kernel where dev implements BatchNormReLUKernels, else the
// two kernels in turn, with the same results.
func BatchNormReLUTrain(dev Device, x, gamma, beta, y, runMean, runVar, saveMean, saveInvStd *Tensor, p BatchNormParams) {
	if f, ok := dev.(BatchNormReLUKernels); ok {
		f.BatchNormReLUTrain(x, gamma, beta, y, runMean, runVar, saveMean, saveInvStd, p)
		return
	}
	dev.BatchNormTrain(x, gamma, beta, y, runMean, runVar, saveMean, saveInvStd, p)
	dev.ReLUForward(y, y)
}

// BatchNormReLUBackward is ReLUBackward through y, BatchNormReLUTrain's
// output, then BatchNormBackward, on dev: dx, and dgamma and dbeta
// accumulated, from dy, the gradient of y. Where dev does not fuse them,
// the ReLU's gradient lies in a workspace tensor between the two kernels:
// BatchNormBackward's dx may not alias its dy, and dy is the caller's.
func BatchNormReLUBackward(dev Device, x, y, dy, gamma, saveMean, saveInvStd, dx, dgamma, dbeta *Tensor) {
	if f, ok := dev.(BatchNormReLUKernels); ok {
		f.BatchNormReLUBackward(x, y, dy, gamma, saveMean, saveInvStd, dx, dgamma, dbeta)
		return
	}
	SameShape("batchnorm relu backward", y, dy)
	dr := dev.Alloc(Workspace, dy.Shape()...)
	defer dr.Release()
	dev.ReLUBackward(y, dy, dr)
	dev.BatchNormBackward(x, dr, gamma, saveMean, saveInvStd, dx, dgamma, dbeta)
}
