//go:build cuda

package driver

/*
#include "shim.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"unsafe"

	"github.com/pipecast/pipecast/tensor/cuda"
)

// dnn is cuDNN's legacy convolution API on one logical device's stream:
// a handle made with the GPU's primary context current and bound to the
// stream (cudnnSetStream), and, per convolution shape, descriptors and
// the algorithm chosen for each direction.
type dnn struct {
	d       *Driver
	handle  unsafe.Pointer
	version string // "9.10.2"
	plans   map[cuda.ConvShape]*convPlan
}

// direction is one of the three convolutions of a layer.
type direction int

const (
	forward        direction = iota // y = conv(x, w)
	backwardData                    // dx from dy
	backwardFilter                  // dw += from x and dy
	numDirections
)

func (dir direction) String() string {
	return [...]string{"forward", "backward data", "backward filter"}[dir]
}

// convPlan holds the descriptors of one shape: x and y (NCHW float
// tensors; dx and dy share them), w (the NCHW float filter, also dw's)
// and conv (padding, strides, dilation 1, cross-correlation, float
// accumulation, CUDNN_FMA_MATH).
type convPlan struct {
	x, y, w, conv unsafe.Pointer
	algos         [numDirections]algoChoice
}

// algoChoice is the algorithm a direction runs and the workspace it needs.
type algoChoice struct {
	chosen bool
	algo   C.int
	bytes  int64
}

// maxAlgos bounds the heuristics' results: cuDNN 8 and 9 have 8 forward,
// 6 backward-data and 7 backward-filter algorithms.
const maxAlgos = 16

// newDNN makes d's cuDNN handle, or returns nil (with a note) when the
// library is absent or refuses. Called from Open, with the context
// current on a locked thread.
func newDNN(d *Driver) *dnn {
	if !cudnnLib.load() {
		return nil
	}
	dn := &dnn{d: d, plans: map[cuda.ConvShape]*convPlan{}}
	if err := cudnnError("cudnnCreate", C.pc_cudnnCreate(&dn.handle)); err != nil {
		addNote(fmt.Sprintf("cudnn: not used on GPU %d: %v", d.gpu.ordinal, err))
		return nil
	}
	if err := cudnnError("cudnnSetStream", C.pc_cudnnSetStream(dn.handle, unsafe.Pointer(d.stream.C()))); err != nil {
		addNote(fmt.Sprintf("cudnn: not used on GPU %d: %v", d.gpu.ordinal, err))
		C.pc_cudnnDestroy(dn.handle)
		return nil
	}
	dn.version = cudnnVersion(int(C.pc_cudnnGetVersion()))
	return dn
}

// ConvForward sets y = conv(x, w) with cudnnConvolutionForward (beta 0:
// y is not read).
func (dn *dnn) ConvForward(s cuda.ConvShape, x, w, y cuda.Ptr, ws func(n int64) (cuda.Ptr, error)) error {
	return dn.convolve(s, forward, x, w, y, ws)
}

// ConvBackwardData sets dx from dy with cudnnConvolutionBackwardData
// (beta 0).
func (dn *dnn) ConvBackwardData(s cuda.ConvShape, dy, w, dx cuda.Ptr, ws func(n int64) (cuda.Ptr, error)) error {
	return dn.convolve(s, backwardData, dy, w, dx, ws)
}

// ConvBackwardFilter accumulates the filters' gradient into dw with
// cudnnConvolutionBackwardFilter (beta 1).
func (dn *dnn) ConvBackwardFilter(s cuda.ConvShape, x, dy, dw cuda.Ptr, ws func(n int64) (cuda.Ptr, error)) error {
	return dn.convolve(s, backwardFilter, x, dy, dw, ws)
}

// convolve runs one direction: in1, in2 and out are (x, w, y) forward,
// (dy, w, dx) backward data and (x, dy, dw) backward filter.
func (dn *dnn) convolve(s cuda.ConvShape, dir direction, in1, in2, out cuda.Ptr, ws func(n int64) (cuda.Ptr, error)) error {
	if err := dn.d.enter(); err != nil {
		return err
	}
	defer runtime.UnlockOSThread()
	p, err := dn.plan(s)
	if err != nil {
		return fmt.Errorf("cudnn %s %+v: %w", dir, s, err)
	}
	a := &p.algos[dir]
	if !a.chosen {
		if *a, err = dn.choose(p, dir); err != nil {
			return fmt.Errorf("cudnn %s %+v: %w", dir, s, err)
		}
	}
	choice := *a
	var space cuda.Ptr
	if choice.bytes > 0 {
		space, err = ws(choice.bytes)
		if err != nil && choice.algo != 0 {
			// The fastest algorithm's workspace did not fit: algorithm 0
			// needs little or none.
			zero := algoChoice{chosen: true, algo: 0}
			if zero.bytes, err = dn.workspaceSize(p, dir, 0); err == nil {
				choice = zero
				if choice.bytes > 0 {
					space, err = ws(choice.bytes)
				}
			}
		}
		if err != nil {
			return fmt.Errorf("cudnn %s %+v: workspace of %d bytes: %w", dir, s, choice.bytes, err)
		}
	}
	if err := dn.run(p, dir, choice, space, in1, in2, out); err != nil {
		return fmt.Errorf("%w (%+v, algorithm %d, workspace %d bytes)", err, s, int(choice.algo), choice.bytes)
	}
	return nil
}

// plan returns the descriptors of shape s, made on first use.
func (dn *dnn) plan(s cuda.ConvShape) (*convPlan, error) {
	if p, ok := dn.plans[s]; ok {
		return p, nil
	}
	for _, v := range []int{s.N, s.C, s.H, s.W, s.O, s.KH, s.KW, s.StrideH, s.StrideW, s.OH, s.OW} {
		if v <= 0 || v > math.MaxInt32 {
			return nil, errors.New("sizes and strides must be in [1, 2³¹)")
		}
	}
	if s.PadH < 0 || s.PadW < 0 || s.PadH > math.MaxInt32 || s.PadW > math.MaxInt32 {
		return nil, errors.New("padding must be in [0, 2³¹)")
	}
	p := &convPlan{}
	err := func() error {
		if err := cudnnError("cudnnCreateTensorDescriptor", C.pc_cudnnCreateTensorDescriptor(&p.x)); err != nil {
			return err
		}
		if err := cudnnError("cudnnCreateTensorDescriptor", C.pc_cudnnCreateTensorDescriptor(&p.y)); err != nil {
			return err
		}
		if err := cudnnError("cudnnCreateFilterDescriptor", C.pc_cudnnCreateFilterDescriptor(&p.w)); err != nil {
			return err
		}
		if err := cudnnError("cudnnCreateConvolutionDescriptor", C.pc_cudnnCreateConvolutionDescriptor(&p.conv)); err != nil {
			return err
		}
		if err := cudnnError("cudnnSetTensor4dDescriptor (x)", C.pc_cudnnSetTensor4dDescriptor(p.x,
			C.PC_CUDNN_TENSOR_NCHW, C.PC_CUDNN_DATA_FLOAT, C.int(s.N), C.int(s.C), C.int(s.H), C.int(s.W))); err != nil {
			return err
		}
		if err := cudnnError("cudnnSetTensor4dDescriptor (y)", C.pc_cudnnSetTensor4dDescriptor(p.y,
			C.PC_CUDNN_TENSOR_NCHW, C.PC_CUDNN_DATA_FLOAT, C.int(s.N), C.int(s.O), C.int(s.OH), C.int(s.OW))); err != nil {
			return err
		}
		if err := cudnnError("cudnnSetFilter4dDescriptor", C.pc_cudnnSetFilter4dDescriptor(p.w,
			C.PC_CUDNN_DATA_FLOAT, C.PC_CUDNN_TENSOR_NCHW, C.int(s.O), C.int(s.C), C.int(s.KH), C.int(s.KW))); err != nil {
			return err
		}
		if err := cudnnError("cudnnSetConvolution2dDescriptor", C.pc_cudnnSetConvolution2dDescriptor(p.conv,
			C.int(s.PadH), C.int(s.PadW), C.int(s.StrideH), C.int(s.StrideW), 1, 1,
			C.PC_CUDNN_CROSS_CORRELATION, C.PC_CUDNN_DATA_FLOAT)); err != nil {
			return err
		}
		// FMA only: on Ampere and later, CUDNN_DEFAULT_MATH lets float
		// convolutions use TF32 tensor cores.
		if err := cudnnError("cudnnSetConvolutionMathType", C.pc_cudnnSetConvolutionMathType(p.conv, C.PC_CUDNN_FMA_MATH)); err != nil {
			return err
		}
		var n, c, h, w C.int
		if err := cudnnError("cudnnGetConvolution2dForwardOutputDim", C.pc_cudnnGetConvolution2dForwardOutputDim(p.conv, p.x, p.w, &n, &c, &h, &w)); err != nil {
			return err
		}
		if int(n) != s.N || int(c) != s.O || int(h) != s.OH || int(w) != s.OW {
			return fmt.Errorf("cuDNN's output is [%d %d %d %d], the shape's [%d %d %d %d]", n, c, h, w, s.N, s.O, s.OH, s.OW)
		}
		return nil
	}()
	if err != nil {
		p.destroy()
		return nil, err
	}
	dn.plans[s] = p
	return p, nil
}

// choose takes the first algorithm of cuDNN's heuristics
// (cudnnGetConvolution…Algorithm_v7, best first) that reports success
// in CUDNN_FMA_MATH, or algorithm 0 (implicit GEMM forward, ALGO_0
// backward), which every shape supports; and its workspace size.
func (dn *dnn) choose(p *convPlan, dir direction) (algoChoice, error) {
	var perf [maxAlgos]C.pc_cudnnAlgoPerf
	var returned C.int
	var status C.int
	var call string
	switch dir {
	case forward:
		call = "cudnnGetConvolutionForwardAlgorithm_v7"
		status = C.pc_cudnnGetConvolutionForwardAlgorithm_v7(dn.handle, p.x, p.w, p.conv, p.y, maxAlgos, &returned, &perf[0])
	case backwardData:
		call = "cudnnGetConvolutionBackwardDataAlgorithm_v7"
		status = C.pc_cudnnGetConvolutionBackwardDataAlgorithm_v7(dn.handle, p.w, p.y, p.conv, p.x, maxAlgos, &returned, &perf[0])
	case backwardFilter:
		call = "cudnnGetConvolutionBackwardFilterAlgorithm_v7"
		status = C.pc_cudnnGetConvolutionBackwardFilterAlgorithm_v7(dn.handle, p.x, p.y, p.conv, p.w, maxAlgos, &returned, &perf[0])
	}
	if err := cudnnError(call, status); err != nil {
		return algoChoice{}, err
	}
	choice := algoChoice{chosen: true, algo: 0}
	for _, r := range perf[:min(int(returned), maxAlgos)] {
		if r.status == 0 && r.mathType == C.PC_CUDNN_FMA_MATH {
			choice.algo = r.algo
			break
		}
	}
	var err error
	choice.bytes, err = dn.workspaceSize(p, dir, choice.algo)
	return choice, err
}

// workspaceSize asks cudnnGetConvolution…WorkspaceSize for algorithm
// algo of direction dir.
func (dn *dnn) workspaceSize(p *convPlan, dir direction, algo C.int) (int64, error) {
	var size C.size_t
	var status C.int
	var call string
	switch dir {
	case forward:
		call = "cudnnGetConvolutionForwardWorkspaceSize"
		status = C.pc_cudnnGetConvolutionForwardWorkspaceSize(dn.handle, p.x, p.w, p.conv, p.y, algo, &size)
	case backwardData:
		call = "cudnnGetConvolutionBackwardDataWorkspaceSize"
		status = C.pc_cudnnGetConvolutionBackwardDataWorkspaceSize(dn.handle, p.w, p.y, p.conv, p.x, algo, &size)
	case backwardFilter:
		call = "cudnnGetConvolutionBackwardFilterWorkspaceSize"
		status = C.pc_cudnnGetConvolutionBackwardFilterWorkspaceSize(dn.handle, p.x, p.y, p.conv, p.w, algo, &size)
	}
	if err := cudnnError(call, status); err != nil {
		return 0, fmt.Errorf("%w (algorithm %d)", err, int(algo))
	}
	return int64(size), nil
}

// run queues the convolution on the stream.
func (dn *dnn) run(p *convPlan, dir direction, a algoChoice, space, in1, in2, out cuda.Ptr) error {
	ws, wsBytes := C.uint64_t(space), C.size_t(a.bytes)
	switch dir {
	case forward:
		return cudnnError("cudnnConvolutionForward", C.pc_cudnnConvolutionForward(dn.handle,
			1, p.x, C.uint64_t(in1), p.w, C.uint64_t(in2), p.conv, a.algo, ws, wsBytes, 0, p.y, C.uint64_t(out)))
	case backwardData:
		return cudnnError("cudnnConvolutionBackwardData", C.pc_cudnnConvolutionBackwardData(dn.handle,
			1, p.w, C.uint64_t(in2), p.y, C.uint64_t(in1), p.conv, a.algo, ws, wsBytes, 0, p.x, C.uint64_t(out)))
	default:
		return cudnnError("cudnnConvolutionBackwardFilter", C.pc_cudnnConvolutionBackwardFilter(dn.handle,
			1, p.x, C.uint64_t(in1), p.y, C.uint64_t(in2), p.conv, a.algo, ws, wsBytes, 1, p.w, C.uint64_t(out)))
	}
}

// destroy releases whichever of the plan's descriptors exist.
func (p *convPlan) destroy() error {
	var errs []error
	for _, t := range []unsafe.Pointer{p.x, p.y} {
		if t != nil {
			errs = append(errs, cudnnError("cudnnDestroyTensorDescriptor", C.pc_cudnnDestroyTensorDescriptor(t)))
		}
	}
	if p.w != nil {
		errs = append(errs, cudnnError("cudnnDestroyFilterDescriptor", C.pc_cudnnDestroyFilterDescriptor(p.w)))
	}
	if p.conv != nil {
		errs = append(errs, cudnnError("cudnnDestroyConvolutionDescriptor", C.pc_cudnnDestroyConvolutionDescriptor(p.conv)))
	}
	*p = convPlan{}
	return errors.Join(errs...)
}

// close destroys the plans and the handle; d's context is current.
func (dn *dnn) close() error {
	if dn.handle == nil {
		return nil
	}
	var errs []error
	for s, p := range dn.plans {
		errs = append(errs, p.destroy())
		delete(dn.plans, s)
	}
	errs = append(errs, cudnnError("cudnnDestroy", C.pc_cudnnDestroy(dn.handle)))
	dn.handle = nil
	return errors.Join(errs...)
}
