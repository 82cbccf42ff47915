package meta

import (
	"testing"

	"github.com/pipecast/pipecast/tensor"
)

// fakeWorkspace is a workspace model with fixed answers that notes the
// passes it is asked about.
type fakeWorkspace struct {
	conv, gemm int
	passes     []tensor.ConvPass
	threads    []int
}

func (f *fakeWorkspace) ConvWorkspaceElems(pass tensor.ConvPass, x, w, y tensor.Shape, p tensor.Conv2DParams, threads int) int {
	f.passes = append(f.passes, pass)
	f.threads = append(f.threads, threads)
	return f.conv
}

func (f *fakeWorkspace) GemmWorkspaceElems(m, n, k, threads int) int {
	f.threads = append(f.threads, threads)
	return f.gemm
}

// runScratchKernels runs every kernel that takes scratch once on d, and
// returns the Workspace peak after each (the peak reset before each).
func runScratchKernels(d *Device) []int64 {
	p := tensor.Conv2DParams{StrideH: 1, StrideW: 1, PadH: 1, PadW: 1}
	x := d.Alloc(tensor.Activations, 2, 3, 5, 5)
	w := d.Alloc(tensor.Weights, 4, 3, 3, 3)
	y := d.Alloc(tensor.Activations, 2, 4, 5, 5)
	a := d.Alloc(tensor.Activations, 2, 6)
	lw := d.Alloc(tensor.Weights, 3, 6)
	ly := d.Alloc(tensor.Activations, 2, 3)
	var peaks []int64
	for _, run := range []func(){
		func() { d.Conv2DForward(x, w, nil, y, p) },
		func() { d.Conv2DBackwardData(y, w, x, p) },
		func() { d.Conv2DBackwardFilter(x, y, w, nil, p) },
		func() { d.LinearForward(a, lw, nil, ly) },
		func() { d.Gemm(false, true, 1, a, lw, 0, ly) },
	} {
		d.ResetPeak()
		run()
		peaks = append(peaks, d.Memory().PeakBytes[tensor.Workspace])
		if live := d.Memory().LiveBytes[tensor.Workspace]; live != 0 {
			panic("meta: scratch left live")
		}
	}
	return peaks
}

func TestScratchFollowsWorkspaceModel(t *testing.T) {
	d := newDevice(0, 3)
	f := &fakeWorkspace{conv: 100, gemm: 7}
	d.ws = f
	got := runScratchKernels(d)
	want := []int64{400, 400, 400, 28, 28}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("kernel %d: workspace peak %d bytes, want %d", i, got[i], want[i])
		}
	}
	wantPasses := []tensor.ConvPass{tensor.ConvForward, tensor.ConvBackwardData, tensor.ConvBackwardFilter}
	if len(f.passes) != len(wantPasses) {
		t.Fatalf("passes asked: got %v, want %v", f.passes, wantPasses)
	}
	for i := range wantPasses {
		if f.passes[i] != wantPasses[i] {
			t.Errorf("passes asked: got %v, want %v", f.passes, wantPasses)
		}
	}
	for _, th := range f.threads {
		if th != 3 {
			t.Errorf("threads asked: got %v, want 3 each", f.threads)
			break
		}
	}
}

// TestNoWorkspaceModel checks that a meta device whose imitated backend
// registered no workspace model accounts no scratch.
func TestNoWorkspaceModel(t *testing.T) {
	d := newDevice(0, 2)
	d.ws = nil
	for i, got := range runScratchKernels(d) {
		if got != 0 {
			t.Errorf("kernel %d: workspace peak %d bytes, want 0", i, got)
		}
	}
}
