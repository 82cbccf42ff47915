//go:build cudaemu

package emu

import (
	"fmt"
	"math"

	"github.com/pipecast/pipecast/tensor"
	"github.com/pipecast/pipecast/tensor/cuda"
)

// checkedDevice is the GPU backend's Device over the emulator whose
// kernels also run on a CPU device: before each launch the inputs (and
// the outputs a kernel accumulates into) are copied to the CPU, the
// kernel runs on both, and every element the kernel writes must agree
// within kernelTol of its bound. Its results are the emulator's, so a run
// on it is a run on "cuda-emu" with the same allocations and transfers;
// what differs is the time it takes and what it checks.
type checkedDevice struct {
	*cuda.Device
	cpu tensor.Device
}

// Close closes both devices.
func (d *checkedDevice) Close() error {
	err := d.cpu.Close()
	if e := d.Device.Close(); e != nil {
		err = e
	}
	return err
}

// launch is one kernel call to compare: its tensor arguments (nil where
// the kernel takes none), which of them it writes, how to run it on the
// emulator and on the CPU copies, and the bound of each written element.
type launch struct {
	op    string
	args  []*tensor.Tensor
	outs  []int
	gpu   func()
	cpu   func(c []*tensor.Tensor)
	bound func(pre [][]float32) [][]float64 // by argument; nil: outputs must be equal
}

// run runs l on both devices and records the comparison.
func (d *checkedDevice) run(l launch) {
	pre := make([][]float32, len(l.args))
	twins := make([]*tensor.Tensor, len(l.args))
	type key struct {
		st  *tensor.Storage
		off int
	}
	seen := map[key]*tensor.Tensor{}
	for i, a := range l.args {
		if a == nil {
			continue
		}
		pre[i] = tensor.ToHost(a)
		k := key{a.Storage(), a.Offset()}
		if tw, ok := seen[k]; ok && tw.Len() == a.Len() {
			twins[i] = tw // an output that aliases an input stays aliased
			continue
		}
		twins[i] = tensor.FromHost(d.cpu, tensor.Workspace, a.Shape(), pre[i])
		seen[k] = twins[i]
	}
	l.gpu()
	l.cpu(twins)
	checks.launched(l.op)
	var bounds [][]float64
	if l.bound != nil {
		bounds = l.bound(pre)
	}
	for _, o := range l.outs {
		if l.args[o] == nil {
			continue
		}
		got, want := tensor.ToHost(l.args[o]), tensor.ToHost(twins[o])
		var b []float64
		if bounds != nil {
			b = bounds[o]
		}
		checks.record(l.op, o, l.args, got, want, b)
	}
	released := map[*tensor.Tensor]bool{}
	for _, tw := range twins {
		if tw != nil && !released[tw] {
			released[tw] = true
			tw.Release()
		}
	}
}

// absOn returns a CPU tensor of |data| shaped like t, or nil for a nil t.
func (d *checkedDevice) absOn(t *tensor.Tensor, data []float32) *tensor.Tensor {
	if t == nil {
		return nil
	}
	a := make([]float32, len(data))
	for i, v := range data {
		a[i] = float32(math.Abs(float64(v)))
	}
	return tensor.FromHost(d.cpu, tensor.Workspace, t.Shape(), a)
}

// absBound makes the bound of a kernel that is linear in each of its
// inputs: the same kernel on the CPU on their magnitudes (and, for the
// outputs it accumulates into, on their previous magnitudes), so every
// term of every sum counts with its size. keep lists arguments passed as
// they are (a max pool's input, which chooses the window's maximum).
func (d *checkedDevice) absBound(args []*tensor.Tensor, outs []int, keep []int, run func(c []*tensor.Tensor)) func(pre [][]float32) [][]float64 {
	return func(pre [][]float32) [][]float64 {
		c := make([]*tensor.Tensor, len(args))
		for i, a := range args {
			c[i] = d.absOn(a, pre[i])
		}
		for _, k := range keep {
			c[k].Release()
			c[k] = tensor.FromHost(d.cpu, tensor.Workspace, args[k].Shape(), pre[k])
		}
		run(c)
		out := make([][]float64, len(args))
		for _, o := range outs {
			if c[o] != nil {
				out[o] = widen(tensor.ToHost(c[o]))
			}
		}
		for _, t := range c {
			if t != nil {
				t.Release()
			}
		}
		return out
	}
}

func widen(s []float32) []float64 {
	out := make([]float64, len(s))
	for i, v := range s {
		out[i] = math.Abs(float64(v))
	}
	return out
}

func (d *checkedDevice) Fill(t *tensor.Tensor, v float32) {
	d.run(launch{op: "Fill", args: []*tensor.Tensor{t}, outs: []int{0},
		gpu: func() { d.Device.Fill(t, v) }, cpu: func(c []*tensor.Tensor) { d.cpu.Fill(c[0], v) }})
}

func (d *checkedDevice) Copy(dst, src *tensor.Tensor) {
	d.run(launch{op: "Copy", args: []*tensor.Tensor{dst, src}, outs: []int{0},
		gpu: func() { d.Device.Copy(dst, src) }, cpu: func(c []*tensor.Tensor) { d.cpu.Copy(c[0], c[1]) }})
}

func (d *checkedDevice) Scale(t *tensor.Tensor, alpha float32) {
	args := []*tensor.Tensor{t}
	run := func(c []*tensor.Tensor) { d.cpu.Scale(c[0], float32(math.Abs(float64(alpha)))) }
	d.run(launch{op: "Scale", args: args, outs: []int{0},
		gpu: func() { d.Device.Scale(t, alpha) }, cpu: func(c []*tensor.Tensor) { d.cpu.Scale(c[0], alpha) },
		bound: d.absBound(args, []int{0}, nil, run)})
}

func (d *checkedDevice) Add(y, a, b *tensor.Tensor) {
	args := []*tensor.Tensor{y, a, b}
	run := func(c []*tensor.Tensor) { d.cpu.Add(c[0], c[1], c[2]) }
	d.run(launch{op: "Add", args: args, outs: []int{0},
		gpu: func() { d.Device.Add(y, a, b) }, cpu: run, bound: d.absBound(args, []int{0}, nil, run)})
}

func (d *checkedDevice) Axpy(alpha float32, x, y *tensor.Tensor) {
	args := []*tensor.Tensor{x, y}
	d.run(launch{op: "Axpy", args: args, outs: []int{1},
		gpu: func() { d.Device.Axpy(alpha, x, y) }, cpu: func(c []*tensor.Tensor) { d.cpu.Axpy(alpha, c[0], c[1]) },
		bound: d.absBound(args, []int{1}, nil, func(c []*tensor.Tensor) { d.cpu.Axpy(float32(math.Abs(float64(alpha))), c[0], c[1]) })})
}

func (d *checkedDevice) Gemm(transA, transB bool, alpha float32, a, b *tensor.Tensor, beta float32, c *tensor.Tensor) {
	args := []*tensor.Tensor{a, b, c}
	abs := func(v float32) float32 { return float32(math.Abs(float64(v))) }
	d.run(launch{op: "Gemm", args: args, outs: []int{2},
		gpu: func() { d.Device.Gemm(transA, transB, alpha, a, b, beta, c) },
		cpu: func(t []*tensor.Tensor) { d.cpu.Gemm(transA, transB, alpha, t[0], t[1], beta, t[2]) },
		bound: d.absBound(args, []int{2}, nil, func(t []*tensor.Tensor) {
			d.cpu.Gemm(transA, transB, abs(alpha), t[0], t[1], abs(beta), t[2])
		})})
}

func (d *checkedDevice) LinearForward(x, w, bias, y *tensor.Tensor) {
	args := []*tensor.Tensor{x, w, bias, y}
	run := func(c []*tensor.Tensor) { d.cpu.LinearForward(c[0], c[1], c[2], c[3]) }
	d.run(launch{op: "LinearForward", args: args, outs: []int{3},
		gpu: func() { d.Device.LinearForward(x, w, bias, y) }, cpu: run, bound: d.absBound(args, []int{3}, nil, run)})
}

func (d *checkedDevice) LinearBackwardData(dy, w, dx *tensor.Tensor) {
	args := []*tensor.Tensor{dy, w, dx}
	run := func(c []*tensor.Tensor) { d.cpu.LinearBackwardData(c[0], c[1], c[2]) }
	d.run(launch{op: "LinearBackwardData", args: args, outs: []int{2},
		gpu: func() { d.Device.LinearBackwardData(dy, w, dx) }, cpu: run, bound: d.absBound(args, []int{2}, nil, run)})
}

func (d *checkedDevice) LinearBackwardParams(x, dy, dw, dbias *tensor.Tensor) {
	args := []*tensor.Tensor{x, dy, dw, dbias}
	run := func(c []*tensor.Tensor) { d.cpu.LinearBackwardParams(c[0], c[1], c[2], c[3]) }
	d.run(launch{op: "LinearBackwardParams", args: args, outs: []int{2, 3},
		gpu: func() { d.Device.LinearBackwardParams(x, dy, dw, dbias) }, cpu: run, bound: d.absBound(args, []int{2, 3}, nil, run)})
}

// convName names a convolution's geometry as the coverage list does:
// "3x3/2 pad 1x0" (kernel, stride, padding).
func convName(w *tensor.Tensor, p tensor.Conv2DParams) string {
	s := fmt.Sprintf("%dx%d/%d pad %dx%d", w.Dim(2), w.Dim(3), p.StrideH, p.PadH, p.PadW)
	if p.StrideW != p.StrideH {
		s = fmt.Sprintf("%dx%d/%dx%d pad %dx%d", w.Dim(2), w.Dim(3), p.StrideH, p.StrideW, p.PadH, p.PadW)
	}
	return s
}

func (d *checkedDevice) Conv2DForward(x, w, bias, y *tensor.Tensor, p tensor.Conv2DParams) {
	checks.conv(convName(w, p))
	args := []*tensor.Tensor{x, w, bias, y}
	run := func(c []*tensor.Tensor) { d.cpu.Conv2DForward(c[0], c[1], c[2], c[3], p) }
	d.run(launch{op: "Conv2DForward " + convName(w, p), args: args, outs: []int{3},
		gpu: func() { d.Device.Conv2DForward(x, w, bias, y, p) }, cpu: run, bound: d.absBound(args, []int{3}, nil, run)})
}

func (d *checkedDevice) Conv2DBackwardData(dy, w, dx *tensor.Tensor, p tensor.Conv2DParams) {
	args := []*tensor.Tensor{dy, w, dx}
	run := func(c []*tensor.Tensor) { d.cpu.Conv2DBackwardData(c[0], c[1], c[2], p) }
	d.run(launch{op: "Conv2DBackwardData " + convName(w, p), args: args, outs: []int{2},
		gpu: func() { d.Device.Conv2DBackwardData(dy, w, dx, p) }, cpu: run, bound: d.absBound(args, []int{2}, nil, run)})
}

func (d *checkedDevice) Conv2DBackwardFilter(x, dy, dw, dbias *tensor.Tensor, p tensor.Conv2DParams) {
	args := []*tensor.Tensor{x, dy, dw, dbias}
	run := func(c []*tensor.Tensor) { d.cpu.Conv2DBackwardFilter(c[0], c[1], c[2], c[3], p) }
	d.run(launch{op: "Conv2DBackwardFilter " + convName(dw, p), args: args, outs: []int{2, 3},
		gpu: func() { d.Device.Conv2DBackwardFilter(x, dy, dw, dbias, p) }, cpu: run, bound: d.absBound(args, []int{2, 3}, nil, run)})
}
