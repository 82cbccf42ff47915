package cuda

import (
	"fmt"
	"os"
	"sync"
	"testing"
	"unsafe"

	"github.com/pipecast/pipecast/tensor/cuda/internal/abi"
)

// fakeDriver is a Driver on host memory that runs no kernel: Launch only
// records the launch, with its arguments decoded by the prototypes of
// kernels/kernels.h. Memory, copies and memsets work, so that accounting,
// the cache and transfers can be tested without a GPU or the emulator.
// Like a real Driver, it is not safe for concurrent use.
type fakeDriver struct {
	next     Ptr
	mem      map[Ptr][]byte
	allocs   int
	frees    int
	syncs    int
	closed   bool
	launches []launchRec
	blas     BLAS
	dnn      DNN
	// limit, when positive, makes Alloc fail once the live bytes would
	// pass it, as a GPU runs out of memory.
	limit      int64
	live       int64
	failLaunch error
	// onLaunch, when set, runs after a launch is recorded: a test's
	// stand-in for a kernel's effect.
	onLaunch func(f *fakeDriver, r launchRec)
}

// launchRec is one recorded launch.
type launchRec struct {
	k           Kernel
	grid, block [3]uint32
	args        map[string]any // by parameter name: Ptr, int32, int64, float32, float64 or uint64
}

func newFakeDriver() *fakeDriver { return &fakeDriver{next: 1 << 20, mem: map[Ptr][]byte{}} }

// newFake returns a device on a fresh fake driver, closed when the test
// ends.
func newFake(t *testing.T) (*Device, *fakeDriver) {
	t.Helper()
	f := newFakeDriver()
	d := New(f, "cudafake", "cudafake:0")
	t.Cleanup(func() { d.Close() })
	return d, f
}

var prototypes = sync.OnceValue(func() []abi.Kernel {
	h, err := os.ReadFile("kernels/kernels.h")
	if err != nil {
		panic(err)
	}
	ks, err := abi.Parse(h)
	if err != nil {
		panic(err)
	}
	return ks
})

func (f *fakeDriver) Alloc(n int64) (Ptr, error) {
	if f.limit > 0 && f.live+n > f.limit {
		return 0, fmt.Errorf("out of memory: %d bytes live, %d asked, limit %d", f.live, n, f.limit)
	}
	p := f.next
	f.next += Ptr((n+4095)/4096*4096 + 4096) // a gap, so that overruns land nowhere
	f.mem[p] = make([]byte, n)
	f.allocs++
	f.live += n
	return p, nil
}

func (f *fakeDriver) Free(p Ptr) error {
	b, ok := f.mem[p]
	if !ok {
		return fmt.Errorf("free of %#x: not allocated", uintptr(p))
	}
	delete(f.mem, p)
	f.frees++
	f.live -= int64(len(b))
	return nil
}

// bytes returns the n bytes at p, which must lie within one allocation.
func (f *fakeDriver) bytes(p Ptr, n int64) []byte {
	for base, b := range f.mem {
		if p >= base && p+Ptr(n) <= base+Ptr(len(b)) {
			return b[p-base : int64(p-base)+n]
		}
	}
	panic(fmt.Sprintf("fake driver: %d bytes at %#x lie outside every allocation", n, uintptr(p)))
}

func (f *fakeDriver) floats(p Ptr, n int) []float32 {
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&f.bytes(p, int64(n)*4)[0])), n)
}

func (f *fakeDriver) Upload(dst Ptr, src []float32) error {
	copy(f.floats(dst, len(src)), src)
	return nil
}

func (f *fakeDriver) UploadInt32(dst Ptr, src []int32) error {
	b := f.bytes(dst, int64(len(src))*4)
	copy(unsafe.Slice((*int32)(unsafe.Pointer(&b[0])), len(src)), src)
	return nil
}

func (f *fakeDriver) Download(dst []float32, src Ptr) error {
	copy(dst, f.floats(src, len(dst)))
	return nil
}

func (f *fakeDriver) DownloadFloat64(dst []float64, src Ptr) error {
	b := f.bytes(src, int64(len(dst))*8)
	copy(dst, unsafe.Slice((*float64)(unsafe.Pointer(&b[0])), len(dst)))
	return nil
}

func (f *fakeDriver) Copy(dst, src Ptr, n int64) error {
	copy(f.bytes(dst, n), f.bytes(src, n))
	return nil
}

func (f *fakeDriver) CopyFrom(dst Ptr, from Driver, src Ptr, n int64) error {
	copy(f.bytes(dst, n), from.(*fakeDriver).bytes(src, n))
	return nil
}

func (f *fakeDriver) Memset32(dst Ptr, v uint32, n int64) error {
	b := f.bytes(dst, n*4)
	s := unsafe.Slice((*uint32)(unsafe.Pointer(&b[0])), n)
	for i := range s {
		s[i] = v
	}
	return nil
}

func (f *fakeDriver) Launch(k Kernel, grid, block [3]uint32, args []unsafe.Pointer) error {
	if f.failLaunch != nil {
		return f.failLaunch
	}
	proto := prototypes()[k]
	if len(args) != len(proto.Params) {
		return fmt.Errorf("%s takes %d arguments, got %d", proto.Name, len(proto.Params), len(args))
	}
	r := launchRec{k: k, grid: grid, block: block, args: map[string]any{}}
	for i, p := range proto.Params {
		switch a := args[i]; p.Type {
		case abi.FloatPtr, abi.ConstFloatPtr, abi.ConstIntPtr, abi.DoublePtr:
			r.args[p.Name] = *(*Ptr)(a)
		case abi.Int:
			r.args[p.Name] = *(*int32)(a)
		case abi.LongLong:
			r.args[p.Name] = *(*int64)(a)
		case abi.Float:
			r.args[p.Name] = *(*float32)(a)
		case abi.Double:
			r.args[p.Name] = *(*float64)(a)
		case abi.ULongLong:
			r.args[p.Name] = *(*uint64)(a)
		default:
			return fmt.Errorf("%s: parameter %s of type %s", proto.Name, p.Name, p.Type)
		}
	}
	f.launches = append(f.launches, r)
	if f.onLaunch != nil {
		f.onLaunch(f, r)
	}
	return nil
}

func (f *fakeDriver) Sync() error { f.syncs++; return nil }
func (f *fakeDriver) BLAS() BLAS  { return f.blas }
func (f *fakeDriver) DNN() DNN    { return f.dnn }

func (f *fakeDriver) MemInfo() (free, total int64, err error) {
	return 1<<30 - f.live, 1 << 30, nil
}

func (f *fakeDriver) Info() Info {
	return Info{Model: "Fake H200", Ordinal: 3, Share: "stream", Driver: "12.8",
		Libraries: []string{"cublas 12.8.4", "cudnn 9.10.2"}, PeerAccess: []int{0, 1}}
}

func (f *fakeDriver) Close() error {
	if len(f.mem) != 0 {
		return fmt.Errorf("close with %d allocations live", len(f.mem))
	}
	f.closed = true
	return nil
}

// kernels returns the names of the recorded launches.
func (f *fakeDriver) kernels() []string {
	var names []string
	for _, r := range f.launches {
		names = append(names, r.k.Name())
	}
	return names
}

// panicMessage returns what fn panicked with, or "".
func panicMessage(fn func()) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg = fmt.Sprint(r)
		}
	}()
	fn()
	return ""
}
