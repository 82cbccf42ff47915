package tensortest

import "github.com/pipecast/pipecast/tensor"

// bare is a device with its optional capabilities hidden: only Device's
// methods show through the embedded interface, so the functions of
// package tensor beside each capability (SGDStep, BatchNormReLUTrain,
// FirstNonFiniteOn …) take their fallbacks on it, composed from Kernels.
// Its tensors are the wrapped device's.
type bare struct{ tensor.Device }

// route is one way the suite reaches a kernel family on a device.
type route struct {
	name string
	dev  tensor.Device
}

// routes returns the ways to test a kernel family on dev: "kernel", dev
// itself, where has says that dev implements the family's interface, and
// always "fallback", dev with its capabilities hidden. A backend without
// the kernel is so tested on the path it runs, and one with it on both.
func routes(dev tensor.Device, has bool) []route {
	var rs []route
	if has {
		rs = append(rs, route{"kernel", dev})
	}
	return append(rs, route{"fallback", bare{dev}})
}
