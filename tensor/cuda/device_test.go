package cuda

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"github.com/pipecast/pipecast/tensor"
	"github.com/pipecast/pipecast/tensor/cpu"
)

func TestAllocAccountsZeroesAndReuses(t *testing.T) {
	d, f := newFake(t)
	w := d.Alloc(tensor.Weights, 3, 5)       // 60 bytes
	a := d.Alloc(tensor.Activations, 10, 10) // 400 bytes, a block of 512
	d.Upload(a, make100(7))
	m := d.Memory()
	if m.LiveBytes[tensor.Weights] != 60 || m.LiveBytes[tensor.Activations] != 400 || m.LiveTotalBytes != 460 || m.Allocs != 2 {
		t.Errorf("after two allocs: live %v, total %d, allocs %d; want weights 60, activations 400, total 460, 2 allocs",
			m.LiveBytes, m.LiveTotalBytes, m.Allocs)
	}
	if got, want := d.Reserved(), int64(2*512); got != want {
		t.Errorf("reserved: got %d, want %d", got, want)
	}
	pa := PtrOf(a)
	a.Release()
	b := d.Alloc(tensor.Gradients, 120) // 480 bytes: the same rounded size
	if PtrOf(b) != pa {
		t.Errorf("alloc of 480 bytes after releasing 400: got %#x, want the released block %#x", PtrOf(b), pa)
	}
	if f.allocs != 2 {
		t.Errorf("driver allocations: got %d, want 2 (the third served from the cache)", f.allocs)
	}
	for i, v := range tensor.ToHost(b) {
		if v != 0 {
			t.Fatalf("reused block not zeroed: element %d is %v", i, v)
		}
	}
	m = d.Memory()
	if m.LiveBytes[tensor.Activations] != 0 || m.PeakBytes[tensor.Activations] != 400 ||
		m.LiveBytes[tensor.Gradients] != 480 || m.PeakTotalBytes != 540 {
		t.Errorf("after the reuse: live %v, peak %v, peak total %d; want activations 0 (peak 400), gradients 480, peak total 540",
			m.LiveBytes, m.PeakBytes, m.PeakTotalBytes)
	}
	d.Retag(b, tensor.Boundary)
	if m := d.Memory(); m.LiveBytes[tensor.Gradients] != 0 || m.LiveBytes[tensor.Boundary] != 480 || b.Category() != tensor.Boundary {
		t.Errorf("retag: live %v, category %v; want 480 boundary bytes", m.LiveBytes, b.Category())
	}
	d.ResetPeak()
	if m := d.Memory(); m.PeakTotalBytes != 540 || m.PeakBytes[tensor.Activations] != 0 {
		t.Errorf("ResetPeak: peak total %d, peak activations %d; want 540 and 0", m.PeakTotalBytes, m.PeakBytes[tensor.Activations])
	}
	w.Release()
	b.Release()
	if m := d.Memory(); m.LiveTotalBytes != 0 {
		t.Errorf("after releasing all: %d bytes live", m.LiveTotalBytes)
	}
	if f.frees != 0 || d.Reserved() != 1024 {
		t.Errorf("after releasing all: %d driver frees, %d reserved; want 0 and 1024 (cached)", f.frees, d.Reserved())
	}
}

func make100(v float32) []float32 {
	s := make([]float32, 100)
	for i := range s {
		s[i] = v
	}
	return s
}

func TestCloseFreesEverything(t *testing.T) {
	f := newFakeDriver()
	d := New(f, "cudafake", "cudafake:0")
	kept := d.Alloc(tensor.Weights, 1<<19) // 2 MiB, still live at Close
	d.Alloc(tensor.Activations, 7).Release()
	d.Alloc(tensor.Activations, 300).Release()
	if err := d.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if !f.closed || len(f.mem) != 0 || f.frees != f.allocs {
		t.Errorf("after Close: driver closed %v, %d allocations left, %d frees of %d", f.closed, len(f.mem), f.frees, f.allocs)
	}
	if d.Reserved() != 0 {
		t.Errorf("reserved after Close: %d", d.Reserved())
	}
	frees := f.frees
	kept.Release() // accounted, not freed twice
	if f.frees != frees || d.Memory().LiveTotalBytes != 0 {
		t.Errorf("release after Close: %d driver frees (want %d), %d bytes live", f.frees, frees, d.Memory().LiveTotalBytes)
	}
	if err := d.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if msg := panicMessage(func() { d.Alloc(tensor.Weights, 1) }); !strings.Contains(msg, "device closed") {
		t.Errorf("Alloc after Close: got panic %q, want one saying the device is closed", msg)
	}
}

func TestViewsAddressTheirOffset(t *testing.T) {
	d, f := newFake(t)
	x := d.Alloc(tensor.Activations, 4, 6)
	defer x.Release()
	mid := x.Slice(1, 3)
	defer mid.Release()
	if got, want := PtrOf(mid), PtrOf(x)+6*4; got != want {
		t.Errorf("PtrOf a slice from row 1: got %#x, want %#x", got, want)
	}
	f.launches = nil
	d.Fill(mid, 2)
	if len(f.launches) != 1 || f.launches[0].args["y"] != PtrOf(mid) || f.launches[0].args["n"] != int64(12) || f.launches[0].args["v"] != float32(2) {
		t.Errorf("Fill of the view: got launches %+v, want one pc_fill of 12 elements at %#x", f.launches, PtrOf(mid))
	}
}

func TestCopyFromCPU(t *testing.T) {
	d, _ := newFake(t)
	host := cpu.New(tensor.Options{Threads: 1})
	defer host.Close()
	data := []float32{1, -2, 3.5, 4, 5}
	src := tensor.FromHost(host, tensor.Activations, tensor.Shape{5}, data)
	defer src.Release()
	dst := d.Alloc(tensor.Comm, 5)
	defer dst.Release()
	d.CopyFrom(dst, src)
	if got := tensor.ToHost(dst); fmt.Sprint(got) != fmt.Sprint(data) {
		t.Errorf("CopyFrom a CPU tensor: got %v, want %v", got, data)
	}
	// And back: the CPU backend downloads from this device.
	back := host.Alloc(tensor.Comm, 5)
	defer back.Release()
	host.CopyFrom(back, dst)
	if got := tensor.ToHost(back); fmt.Sprint(got) != fmt.Sprint(data) {
		t.Errorf("CopyFrom to the CPU: got %v, want %v", got, data)
	}
}

func TestCopyFromAnotherDevice(t *testing.T) {
	a, fa := newFake(t)
	fb := newFakeDriver()
	b := New(fb, "cudafake", "cudafake:1")
	defer b.Close()
	data := []float32{9, 8, 7}
	src := tensor.FromHost(a, tensor.Activations, tensor.Shape{3}, data)
	defer src.Release()
	dst := b.Alloc(tensor.Comm, 3)
	defer dst.Release()
	sa, sb := fa.syncs, fb.syncs
	b.CopyFrom(dst, src)
	if got := tensor.ToHost(dst); fmt.Sprint(got) != fmt.Sprint(data) {
		t.Errorf("CopyFrom across devices: got %v, want %v", got, data)
	}
	// The source's stream is waited for before the copy, the
	// destination's after it (the sender may release src at once).
	if fa.syncs != sa+1 || fb.syncs != sb+1 {
		t.Errorf("syncs: source %d, destination %d; want one each", fa.syncs-sa, fb.syncs-sb)
	}
	// On one device, a plain copy on the stream, no wait.
	own := a.Alloc(tensor.Comm, 3)
	defer own.Release()
	sa = fa.syncs
	a.CopyFrom(own, src)
	if got := tensor.ToHost(own); fmt.Sprint(got) != fmt.Sprint(data) || fa.syncs != sa {
		t.Errorf("CopyFrom on one device: got %v with %d syncs, want %v with none", got, fa.syncs-sa, data)
	}
}

func TestEmptyTensorLaunchesNothing(t *testing.T) {
	d, f := newFake(t)
	// No Alloc makes an empty tensor (shapes must be positive), but a
	// kernel given one must not launch a grid of no blocks.
	e := tensor.NewTensor(d, tensor.Activations, tensor.Shape{0, 3}, &memBlock{})
	f2 := tensor.NewTensor(d, tensor.Activations, tensor.Shape{0, 3}, &memBlock{})
	d.Fill(e, 1)
	d.Scale(e, 2)
	d.Add(e, e, f2)
	d.Axpy(1, e, f2)
	d.ReLUForward(e, f2)
	d.ReLUBackward(e, e, f2)
	d.Copy(e, f2)
	d.DropoutForward(e, f2, 0.5, tensor.DropoutKey{})
	d.SGDStep(e, f2, nil, tensor.SGDParams{LR: 1}, true)
	if len(f.launches) != 0 {
		t.Errorf("kernels on empty tensors launched %v, want nothing", f.kernels())
	}
	e.Release()
	f2.Release()
}

func TestLaunchErrorPanicsOnOneLine(t *testing.T) {
	d, f := newFake(t)
	x := d.Alloc(tensor.Activations, 8)
	defer x.Release()
	f.failLaunch = errors.New("CUDA_ERROR_INVALID_VALUE")
	msg := panicMessage(func() { d.Scale(x, 2) })
	if !strings.Contains(msg, "cudafake:0") || !strings.Contains(msg, "pc_scale") ||
		!strings.Contains(msg, "CUDA_ERROR_INVALID_VALUE") || strings.Contains(msg, "\n") {
		t.Errorf("got panic %q, want one line naming the device, the kernel and the error", msg)
	}
}

func TestAcceleratorInfo(t *testing.T) {
	for _, tc := range []struct {
		name, gemm, conv string
		libs             string
	}{
		{name: "libraries", libs: "[cublas 12.8.4 cudnn 9.10.2]"},
		{name: "gemm forced", gemm: "kernel", libs: "[cudnn 9.10.2]"},
		{name: "both forced", gemm: "kernel", conv: "kernel", libs: "[]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(gemmEnv, tc.gemm)
			t.Setenv(convEnv, tc.conv)
			f := newFakeDriver()
			f.blas, f.dnn = &fakeBLAS{}, &fakeDNN{}
			d := New(f, "cudafake", "cudafake:0")
			defer d.Close()
			x := d.Alloc(tensor.Weights, 1000)
			defer x.Release()
			info := d.AcceleratorInfo()
			if info.Model != "Fake H200" || info.Ordinal != 3 || info.Share != "stream" || info.Driver != "12.8" ||
				fmt.Sprint(info.Libraries) != tc.libs || info.TotalBytes != 1<<30 || info.FreeBytes != 1<<30-4096 {
				t.Errorf("got %+v, want Fake H200, ordinal 3, stream, driver 12.8, libraries %s, 4096 of 1 GiB used", info, tc.libs)
			}
		})
	}
}

func TestSoftmaxSumsRowLossesInOrder(t *testing.T) {
	d, f := newFake(t)
	x := d.Alloc(tensor.Activations, 3, 4)
	defer x.Release()
	labels := []int32{2, 0, 3}
	rowLoss := []float64{1e16, 1, -1e16} // summed in row order: (1e16 + 1) − 1e16 = 0
	var gotLabels []int32
	f.onLaunch = func(f *fakeDriver, r launchRec) {
		if r.k != KernelSoftmaxXent {
			return
		}
		b := f.bytes(r.args["labels"].(Ptr), 12)
		gotLabels = append([]int32(nil), unsafe.Slice((*int32)(unsafe.Pointer(&b[0])), 3)...)
		l := f.bytes(r.args["losses"].(Ptr), 24)
		copy(unsafe.Slice((*float64)(unsafe.Pointer(&l[0])), 3), rowLoss)
	}
	loss := d.SoftmaxCrossEntropy(x, labels, nil, 1)
	if want := (rowLoss[0] + rowLoss[1]) + rowLoss[2]; loss != want {
		t.Errorf("loss: got %v, want %v", loss, want)
	}
	if fmt.Sprint(gotLabels) != fmt.Sprint(labels) {
		t.Errorf("labels on the device: got %v, want %v", gotLabels, labels)
	}
	r := f.launches[len(f.launches)-1]
	if r.args["dlogits"] != Ptr(0) || r.args["rows"] != int32(3) || r.args["classes"] != int32(4) {
		t.Errorf("pc_softmax_xent arguments: got %v, want no dlogits, 3 rows of 4 classes", r.args)
	}
	if m := d.Memory(); m.LiveBytes[tensor.Workspace] != 0 || m.PeakBytes[tensor.Workspace] != 3*4+3*8 {
		t.Errorf("workspace: %d bytes live, peak %d; want 0 live, peak %d (labels and float64 losses)",
			m.LiveBytes[tensor.Workspace], m.PeakBytes[tensor.Workspace], 3*4+3*8)
	}
}

func TestKernelsReleaseTheirWorkspace(t *testing.T) {
	d, _ := newFake(t)
	alloc := func(s ...int) *tensor.Tensor { return d.Alloc(tensor.Activations, s...) }
	x, y, dx := alloc(2, 3, 4, 5), alloc(2, 3, 4, 5), alloc(2, 3, 4, 5)
	g, b, m, inv, rm, rv := alloc(3), alloc(3), alloc(3), alloc(3), alloc(3), alloc(3)
	p := tensor.DefaultBatchNorm()
	d.BatchNormTrain(x, g, b, y, rm, rv, m, inv, p)
	d.BatchNormEval(x, g, b, rm, rv, y, p)
	d.BatchNormBackward(x, y, g, m, inv, dx, rm, rv)
	mem := d.Memory()
	if mem.LiveBytes[tensor.Workspace] != 0 || mem.PeakBytes[tensor.Workspace] != 2*3*4 {
		t.Errorf("batch norm workspace: %d bytes live, peak %d; want 0 and %d (the backward's two sums)",
			mem.LiveBytes[tensor.Workspace], mem.PeakBytes[tensor.Workspace], 2*3*4)
	}
	for _, t := range []*tensor.Tensor{x, y, dx, g, b, m, inv, rm, rv} {
		t.Release()
	}
	if m := d.Memory(); m.LiveTotalBytes != 0 {
		t.Errorf("%d bytes live after releasing all", m.LiveTotalBytes)
	}
}

func TestKernelsCheckShapes(t *testing.T) {
	d, f := newFake(t)
	other := New(newFakeDriver(), "cudafake", "cudafake:1")
	defer other.Close()
	a, b := d.Alloc(tensor.Activations, 2, 3), d.Alloc(tensor.Activations, 3, 2)
	foreign := other.Alloc(tensor.Activations, 2, 3)
	defer a.Release()
	defer b.Release()
	defer foreign.Release()
	for _, tc := range []struct {
		name, want string
		fn         func()
	}{
		{"add transposed", "tensor: add: shape [3 2] does not match [2 3]", func() { d.Add(a, a, b) }},
		{"tensor of another device", "cuda: scale: tensor on cudafake:1 used on cudafake:0", func() { d.Scale(foreign, 1) }},
		{"gemm inner dimensions", "tensor: gemm: op(a) 2×3", func() { d.Gemm(false, false, 1, a, a, 0, b) }},
		{"single value per channel", "expected more than 1 value per channel", func() {
			x := d.Alloc(tensor.Activations, 1, 3)
			defer x.Release()
			c := d.Alloc(tensor.Weights, 3)
			defer c.Release()
			d.BatchNormTrain(x, c, c, x, nil, nil, c, c, tensor.DefaultBatchNorm())
		}},
	} {
		if msg := panicMessage(tc.fn); !strings.Contains(msg, tc.want) {
			t.Errorf("%s: got panic %q, want one containing %q", tc.name, msg, tc.want)
		}
	}
	if len(f.launches) != 0 || d.Memory().LiveBytes[tensor.Workspace] != 0 {
		t.Errorf("refused kernels launched %v and left %d workspace bytes", f.kernels(), d.Memory().LiveBytes[tensor.Workspace])
	}
}
