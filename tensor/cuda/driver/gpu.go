//go:build cuda

package driver

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"

	"gorgonia.org/cu"

	"github.com/pipecast/pipecast/tensor/cuda"
	"github.com/pipecast/pipecast/tensor/cuda/kernels"
)

// gpu is a physical GPU as the process uses it: its primary context (the
// one the CUDA runtime inside cuBLAS and cuDNN uses too), the kernels'
// module loaded into it, and the logical devices open on it. A gpu is
// made at the first Open on it and kept for the life of the process: the
// primary context is retained once and never released, so that closing
// and reopening logical devices neither destroys the context (and every
// allocation in it) nor reloads the module.
type gpu struct {
	ordinal int
	dev     cu.Device
	name    string
	sms     int // multiprocessors, 0 if the driver did not say
	ctx     cu.CUContext
	fns     [cuda.NumKernels]cu.Function

	// Guarded by gpusMu.
	open  int   // logical devices open on this GPU
	peers []int // ordinals whose memory this GPU's context reaches directly
}

var (
	gpusMu sync.Mutex
	gpus   = map[int]*gpu{} // by ordinal
)

// acquireGPU returns the GPU of the given ordinal, set up on first use,
// and counts one more logical device open on it. The calling goroutine
// is locked to its thread; acquireGPU leaves the GPU's context current.
func acquireGPU(ordinal int) (*gpu, error) {
	gpusMu.Lock()
	defer gpusMu.Unlock()
	g, ok := gpus[ordinal]
	if !ok {
		var err error
		if g, err = newGPU(ordinal); err != nil {
			return nil, err
		}
		enablePeers(g)
		gpus[ordinal] = g
	}
	if err := cu.SetCurrentContext(g.ctx); err != nil {
		return nil, cuError("cuCtxSetCurrent", err)
	}
	g.open++
	return g, nil
}

// release counts one logical device fewer open on g.
func (g *gpu) release() {
	gpusMu.Lock()
	g.open--
	gpusMu.Unlock()
}

// share is Info.Share: "whole" while one logical device is open on the
// GPU, "stream" while several share it.
func (g *gpu) share() string {
	gpusMu.Lock()
	defer gpusMu.Unlock()
	if g.open > 1 {
		return "stream"
	}
	return "whole"
}

func (g *gpu) peerOrdinals() []int {
	gpusMu.Lock()
	defer gpusMu.Unlock()
	return slices.Clone(g.peers)
}

// newGPU retains the primary context of the GPU, makes it current, loads
// the kernels' fatbin into it and resolves every kernel. Called with
// gpusMu held, on a locked thread.
func newGPU(ordinal int) (*gpu, error) {
	dev, err := cu.GetDevice(ordinal)
	if err != nil {
		return nil, cuError(fmt.Sprintf("cuDeviceGet(%d)", ordinal), err)
	}
	name, err := dev.Name()
	if err != nil {
		return nil, cuError("cuDeviceGetName", err)
	}
	g := &gpu{ordinal: ordinal, dev: dev, name: name}
	// The count only sizes the split of deep products: without it, the
	// backend assumes an H200's.
	if sms, err := dev.Attribute(cu.MultiprocessorCount); err == nil {
		g.sms = sms
	}
	if g.ctx, err = dev.RetainPrimaryCtx(); err != nil {
		return nil, cuError(fmt.Sprintf("cuDevicePrimaryCtxRetain on GPU %d (%s)", ordinal, name), err)
	}
	fail := func(err error) (*gpu, error) {
		// Nothing else holds the context yet: give it back.
		dev.ReleasePrimaryCtx()
		return nil, err
	}
	if err := cu.SetCurrentContext(g.ctx); err != nil {
		return fail(cuError("cuCtxSetCurrent", err))
	}
	if len(kernels.Fatbin) == 0 {
		return fail(errors.New("the kernels' fatbin (tensor/cuda/kernels) is empty"))
	}
	// cuModuleLoadData takes a fatbin as well as a cubin or PTX; cu copies
	// the image into C memory (malloc's alignment suits the fatbin
	// header) for the call.
	mod, err := cu.LoadData(string(kernels.Fatbin))
	if err != nil {
		major, _ := dev.Attribute(cu.ComputeCapabilityMajor)
		minor, _ := dev.Attribute(cu.ComputeCapabilityMinor)
		return fail(cuError(fmt.Sprintf("cuModuleLoadData of the kernels' fatbin (%d bytes) on GPU %d (%s, compute capability %d.%d)",
			len(kernels.Fatbin), ordinal, name, major, minor), err))
	}
	for i := range cuda.NumKernels {
		k := cuda.Kernel(i)
		if g.fns[i], err = mod.Function(k.Name()); err != nil {
			mod.Unload()
			return fail(cuError(fmt.Sprintf("cuModuleGetFunction: kernel %s not in the fatbin", k.Name()), err))
		}
	}
	return g, nil
}

// enablePeers enables peer access between g and every GPU set up before
// it, each way that cuDeviceCanAccessPeer allows; cuCtxEnablePeerAccess
// grants the current context access to the peer's. A failure only
// leaves that pair unlisted: MemcpyPeerAsync copies without peer access
// too, staged through the host. Called with gpusMu held, on a locked
// thread; it leaves g's context current.
func enablePeers(g *gpu) {
	for _, h := range gpus {
		grant(h, g)
		grant(g, h)
	}
	cu.SetCurrentContext(g.ctx)
}

// grant enables from's context to access to's memory if the hardware
// allows.
func grant(from, to *gpu) {
	if ok, err := from.dev.CanAccessPeer(to.dev); err != nil || ok == 0 {
		return
	}
	if err := cu.SetCurrentContext(from.ctx); err != nil {
		return
	}
	if err := to.ctx.EnablePeerAccess(0); err != nil && !errors.Is(err, cu.PeerAccessAlreadyEnabled) {
		return
	}
	from.peers = append(from.peers, to.ordinal)
	slices.Sort(from.peers)
}

// lockContext locks the calling goroutine to its OS thread and makes ctx
// current there. CUDA contexts are current per thread, and goroutines
// move between threads: every call that uses the context holds the
// thread from setting it until its last CUDA call, then unlocks
// (runtime.UnlockOSThread, deferred by the caller). Locks nest, so a
// caller that holds its own thread lock keeps it. On error the thread is
// already unlocked.
func lockContext(ctx cu.CUContext) error {
	runtime.LockOSThread()
	if err := cu.SetCurrentContext(ctx); err != nil {
		runtime.UnlockOSThread()
		return cuError("cuCtxSetCurrent", err)
	}
	return nil
}
