//go:build cuda

package driver

import (
	"testing"
	"unsafe"

	"github.com/pipecast/pipecast/tensor"
	"github.com/pipecast/pipecast/tensor/cuda"
)

func TestLaunchFill(t *testing.T) {
	d := open(t, 0)
	const size, n = 5000, 4321
	y := put(t, d, filled(size, guard))
	ptr, count, v := y, int64(n), float32(3.75)
	// A grid smaller than the work: the kernel loops with a grid stride.
	args := []unsafe.Pointer{unsafe.Pointer(&ptr), unsafe.Pointer(&count), unsafe.Pointer(&v)}
	if err := d.Launch(cuda.KernelFill, [3]uint32{3, 1, 1}, [3]uint32{128, 1, 1}, args); err != nil {
		t.Fatalf("Launch %s: %v", cuda.KernelFill.Name(), err)
	}
	want := filled(size, guard)
	for i := range n {
		want[i] = v
	}
	sameFloats(t, "pc_fill of 4321 of 5000", get(t, d, y, size), want)

	if err := d.Launch(cuda.Kernel(cuda.NumKernels), [3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, nil); err == nil {
		t.Errorf("Launch of kernel %d (out of range): no error", cuda.NumKernels)
	}
}

// TestFreeWhileQueued frees memory that a queued kernel still writes:
// Free must wait for it.
func TestFreeWhileQueued(t *testing.T) {
	d := open(t, 0)
	const n = 1 << 24
	p, err := d.Alloc(n * 4)
	if err != nil {
		t.Fatalf("Alloc: %v", err)
	}
	ptr, count, v := p, int64(n), float32(1)
	args := []unsafe.Pointer{unsafe.Pointer(&ptr), unsafe.Pointer(&count), unsafe.Pointer(&v)}
	for range 20 {
		if err := d.Launch(cuda.KernelFill, [3]uint32{64, 1, 1}, [3]uint32{256, 1, 1}, args); err != nil {
			t.Fatalf("Launch: %v", err)
		}
	}
	if err := d.Free(p); err != nil {
		t.Fatalf("Free with work queued: %v", err)
	}
	if err := d.Sync(); err != nil {
		t.Fatalf("Sync after the Free: %v", err)
	}
}

func TestMemInfo(t *testing.T) {
	d := open(t, 0)
	free, total, err := d.MemInfo()
	if err != nil {
		t.Fatalf("MemInfo: %v", err)
	}
	t.Logf("free %d of %d bytes", free, total)
	if total <= 0 || free <= 0 || free > total {
		t.Fatalf("MemInfo: free %d, total %d; want 0 < free ≤ total", free, total)
	}
	const big = 256 << 20
	alloc(t, d, big/4)
	after, _, err := d.MemInfo()
	if err != nil {
		t.Fatalf("MemInfo: %v", err)
	}
	// Other processes may allocate or free meanwhile: only log.
	t.Logf("after allocating %d bytes: free %d (%+d)", big, after, after-free)
}

func TestVersionStrings(t *testing.T) {
	for _, tc := range []struct {
		name, got, want string
	}{
		{"driver 12.8", driverVersion(12080), "12.8"},
		{"driver 13.0", driverVersion(13000), "13.0"},
		{"cublas 12.8.4", cublasVersion(120804), "12.8.4"},
		{"cublas 11.11.3", cublasVersion(111103), "11.11.3"},
		{"cudnn 9.10.2", cudnnVersion(91002), "9.10.2"},
		{"cudnn 8.9.7", cudnnVersion(8907), "8.9.7"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, tc.got, tc.want)
		}
	}
}

func TestRegisteredBackend(t *testing.T) {
	b, err := tensor.Lookup(BackendName)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %s", b.Name, b.Description)
	dev, err := tensor.Open(BackendName, tensor.Options{Index: 0, Threads: 1})
	if err != nil {
		t.Fatalf("open through the registry: %v", err)
	}
	defer dev.Close()
	if dev.Name() != "cuda:0" || dev.Backend() != BackendName {
		t.Errorf("device named %q of backend %q, want \"cuda:0\" of %q", dev.Name(), dev.Backend(), BackendName)
	}
	x := dev.Alloc(tensor.Activations, 3, 4)
	defer x.Release()
	want := ramp(12, -1.5, 4)
	dev.Upload(x, want)
	got := make([]float32, 12)
	dev.Download(got, x)
	sameFloats(t, "through the registry's device", got, want)
	if acc, ok := dev.(tensor.Accelerator); ok {
		t.Logf("accelerator: %+v", acc.AcceleratorInfo())
	} else {
		t.Errorf("the cuda device is no tensor.Accelerator")
	}
}
