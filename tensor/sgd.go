package tensor

import "fmt"

// SGDStep applies one step of torch.optim.SGD to w on dev (see
// SGDStepper for the update): with dev's kernel where dev is an
// SGDStepper, else composed from Copy, Scale and Axpy, the tensor
// operations torch's own step makes (clone, mul_, add with alpha), in
// its order.
func SGDStep(dev Device, w, g, buf *Tensor, p SGDParams, first bool) {
	if s, ok := dev.(SGDStepper); ok {
		s.SGDStep(w, g, buf, p, first)
		return
	}
	sgdStepComposed(dev, w, g, buf, p, first)
}

// SGDSteps does, for every entry s of steps, SGDStep(dev, s.W, s.G,
// s.Buf, p, s.First) and then, with zeroGrads, zeroes each s.G: in one
// call where dev is an SGDBatcher, else step by step and then Fill on
// each gradient, with the same results.
func SGDSteps(dev Device, steps []ParamStep, p SGDParams, zeroGrads bool) {
	if b, ok := dev.(SGDBatcher); ok {
		b.SGDSteps(steps, p, zeroGrads)
		return
	}
	for _, s := range steps {
		SGDStep(dev, s.W, s.G, s.Buf, p, s.First)
	}
	if zeroGrads {
		for _, s := range steps {
			dev.Fill(s.G, 0)
		}
	}
}

// sgdStepComposed is SGDStep for a device without the kernel. It checks
// the arguments as the kernels do, since the kernels it calls would let a
// missing buffer through or report another operation.
func sgdStepComposed(dev Device, w, g, buf *Tensor, p SGDParams, first bool) {
	const op = "sgd step"
	SameShape(op, w, g)
	momentum := p.Momentum != 0
	if momentum {
		if buf == nil {
			panic(fmt.Sprintf("tensor: %s: momentum %v needs a momentum buffer", op, p.Momentum))
		}
		SameShape(op, w, buf)
	}
	// d = g + WeightDecay·w needs a tensor of its own where it differs
	// from g or Nesterov adds to it; the gradient itself stays as it was.
	d := g
	if p.WeightDecay != 0 || (momentum && p.Nesterov) {
		tmp := dev.Alloc(Workspace, w.Shape()...)
		defer tmp.Release()
		dev.Copy(tmp, g)
		if p.WeightDecay != 0 {
			dev.Axpy(p.WeightDecay, w, tmp)
		}
		d = tmp
	}
	if momentum {
		if first {
			// torch clones d into the new buffer, without dampening.
			dev.Copy(buf, d)
		} else {
			dev.Scale(buf, p.Momentum)
			dev.Axpy(1-p.Dampening, d, buf)
		}
		if p.Nesterov {
			dev.Axpy(p.Momentum, buf, d)
		} else {
			d = buf
		}
	}
	dev.Axpy(-p.LR, d, w)
}
