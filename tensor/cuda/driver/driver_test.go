//go:build cuda

package driver

// These tests need an NVIDIA GPU. Without one the test binary cannot
// start at all: gorgonia.org/cu's init calls cuInit and exits (status 1,
// its message on stdout) when that fails. Build the binary anywhere with
//
//	CGO_LDFLAGS=-L/usr/lib/x86_64-linux-gnu/stubs go test -c -tags cuda ./tensor/cuda/driver
//
// and run it on the GPU machine (scripts/gpu-run.sh does both halves).

import (
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"gorgonia.org/cu"

	"github.com/pipecast/pipecast/tensor/cuda"
)

// open opens logical device index, closed when the test ends (after the
// memory the test allocates on it is freed: cleanups run last first).
func open(t *testing.T, index int) *Driver {
	t.Helper()
	d, err := Open(index)
	if err != nil {
		t.Fatalf("Open(%d): %v", index, err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Errorf("Close of device %d: %v", index, err)
		}
	})
	return d
}

func numGPUs(t *testing.T) int {
	t.Helper()
	n, err := cu.NumDevices()
	if err != nil || n < 1 {
		t.Fatalf("cuDeviceGetCount: %d GPUs, %v", n, err)
	}
	return n
}

// alloc returns device memory for n 32-bit words (at least one), freed
// when the test ends.
func alloc(t *testing.T, d *Driver, n int) cuda.Ptr {
	t.Helper()
	p, err := d.Alloc(int64(max(n, 1)) * 4)
	if err != nil {
		t.Fatalf("Alloc of %d words: %v", n, err)
	}
	t.Cleanup(func() {
		if err := d.Free(p); err != nil {
			t.Errorf("Free: %v", err)
		}
	})
	return p
}

// put allocates device memory holding vals.
func put(t *testing.T, d *Driver, vals []float32) cuda.Ptr {
	t.Helper()
	p := alloc(t, d, len(vals))
	if err := d.Upload(p, vals); err != nil {
		t.Fatalf("Upload of %d floats: %v", len(vals), err)
	}
	return p
}

// get downloads n floats from p.
func get(t *testing.T, d *Driver, p cuda.Ptr, n int) []float32 {
	t.Helper()
	out := make([]float32, n)
	if err := d.Download(out, p); err != nil {
		t.Fatalf("Download of %d floats: %v", n, err)
	}
	return out
}

func ramp(n int, scale, offset float32) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(i)*scale + offset
	}
	return v
}

func randoms(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.Float64()*2 - 1)
	}
	return v
}

func filled(n int, v float32) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = v
	}
	return s
}

// guard is the value around outputs that no call may write.
const guard = float32(-7777.25)

// sameFloats fails, listing the first mismatches, unless got equals want
// bit for bit.
func sameFloats(t *testing.T, what string, got, want []float32) {
	t.Helper()
	bad := 0
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			if bad < 5 {
				t.Errorf("%s: element %d: got %v, want %v", what, i, got[i], want[i])
			}
			bad++
		}
	}
	if bad > 5 {
		t.Errorf("%s: %d of %d elements differ in all", what, bad, len(want))
	}
}

func TestOpenSharesAndDescribes(t *testing.T) {
	n := numGPUs(t)
	t.Logf("%d GPU(s); library notes: %q", n, LibraryNotes())
	if _, err := Open(-1); err == nil {
		t.Errorf("Open(-1): no error")
	}
	a := open(t, 0)
	b, err := Open(n) // GPU 0 again: a second stream on it
	if err != nil {
		t.Fatalf("Open(%d): %v", n, err)
	}
	t.Cleanup(func() { b.Close() }) // closed below; Close is idempotent
	for _, d := range []*Driver{a, b} {
		info := d.Info()
		t.Logf("device %d: %+v", d.index, info)
		if info.Model == "" {
			t.Errorf("device %d: empty Model", d.index)
		}
		if info.Ordinal != 0 {
			t.Errorf("device %d: Ordinal %d, want 0 (%d mod %d GPUs)", d.index, info.Ordinal, d.index, n)
		}
		if info.Share != "stream" {
			t.Errorf("device %d with two logical devices open on GPU 0: Share %q, want \"stream\"", d.index, info.Share)
		}
		if !regexp.MustCompile(`^[0-9]+\.[0-9]+$`).MatchString(info.Driver) {
			t.Errorf("device %d: Driver %q, want a version such as \"12.8\"", d.index, info.Driver)
		}
		if slices.Contains(info.PeerAccess, info.Ordinal) {
			t.Errorf("device %d: PeerAccess %v lists its own GPU", d.index, info.PeerAccess)
		}
		var libs []string
		if d.BLAS() != nil {
			libs = append(libs, "cublas ")
		}
		if d.DNN() != nil {
			libs = append(libs, "cudnn ")
		}
		if len(info.Libraries) != len(libs) {
			t.Errorf("device %d: Libraries %q, want one entry for each of %q", d.index, info.Libraries, libs)
		}
		for i, l := range info.Libraries {
			if i < len(libs) && !regexp.MustCompile(`^`+libs[i]+`[0-9]+\.[0-9]+\.[0-9]+$`).MatchString(l) {
				t.Errorf("device %d: library %q, want %q followed by a version", d.index, l, libs[i])
			}
		}
	}
	if a.stream == b.stream {
		t.Errorf("two logical devices on one GPU share a stream")
	}
	if err := b.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if got := a.Info().Share; got != "whole" {
		t.Errorf("after closing the other logical device: Share %q, want \"whole\"", got)
	}
	if err := b.Sync(); err == nil {
		t.Errorf("Sync on a closed device: no error")
	}
	if n > 1 {
		c := open(t, 1)
		if got := c.Info().Ordinal; got != 1 {
			t.Errorf("device 1: Ordinal %d, want 1", got)
		}
	}
}

func TestUploadDownloadRoundTrip(t *testing.T) {
	d := open(t, 0)
	for _, n := range []int{1, 3, 1000, 1 << 20} {
		src := ramp(n, 0.25, -3)
		got := get(t, d, put(t, d, src), n)
		sameFloats(t, fmt.Sprintf("%d floats", n), got, src)
	}

	labels := []int32{0, 1, -1, 7, math.MaxInt32, math.MinInt32}
	p := alloc(t, d, len(labels))
	if err := d.UploadInt32(p, labels); err != nil {
		t.Fatalf("UploadInt32: %v", err)
	}
	words := get(t, d, p, len(labels))
	for i, w := range words {
		if int32(math.Float32bits(w)) != labels[i] {
			t.Errorf("UploadInt32: word %d: got %d, want %d", i, int32(math.Float32bits(w)), labels[i])
		}
	}

	losses := []float64{0, 1.5, -2.25e-300, math.Pi, math.Inf(1)}
	halves := unsafe.Slice((*float32)(unsafe.Pointer(&losses[0])), 2*len(losses))
	p = put(t, d, halves)
	back := make([]float64, len(losses))
	if err := d.DownloadFloat64(back, p); err != nil {
		t.Fatalf("DownloadFloat64: %v", err)
	}
	for i := range losses {
		if math.Float64bits(back[i]) != math.Float64bits(losses[i]) {
			t.Errorf("DownloadFloat64: element %d: got %v, want %v", i, back[i], losses[i])
		}
	}

	// Nothing to copy is no error.
	if err := d.Upload(p, nil); err != nil {
		t.Errorf("Upload of nothing: %v", err)
	}
	if err := d.Download(nil, p); err != nil {
		t.Errorf("Download of nothing: %v", err)
	}
}

func TestCopyAndMemset(t *testing.T) {
	d := open(t, 0)
	const n = 1000
	src := put(t, d, ramp(n, 1, 1))
	dst := put(t, d, filled(n, guard))
	// Copy elements [100, 600) of src to [200, 700) of dst, then set
	// [300, 350) of dst to 2.5.
	if err := d.Copy(dst.Add(200), src.Add(100), 500*4); err != nil {
		t.Fatalf("Copy: %v", err)
	}
	if err := d.Memset32(dst.Add(300), math.Float32bits(2.5), 50); err != nil {
		t.Fatalf("Memset32: %v", err)
	}
	if err := d.Sync(); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	want := filled(n, guard)
	for i := 200; i < 700; i++ {
		want[i] = float32(i - 100 + 1)
	}
	for i := 300; i < 350; i++ {
		want[i] = 2.5
	}
	sameFloats(t, "Copy then Memset32", get(t, d, dst, n), want)
}

// TestCopyFrom copies between two logical devices of GPU 0 and, with a
// second GPU, between GPUs; right after each copy the source overwrites
// its data, which its stream must not do before the copy has read it.
func TestCopyFrom(t *testing.T) {
	n := numGPUs(t)
	a := open(t, 0)
	pairs := []struct {
		name string
		from *Driver
	}{{"same GPU", open(t, n)}}
	if n > 1 {
		pairs = append(pairs, struct {
			name string
			from *Driver
		}{"GPU 1 to GPU 0", open(t, 1)})
	} else {
		t.Log("one GPU: the copy between GPUs is not tested")
	}
	const words = 3 << 20 // large enough that the copy takes a while
	want := ramp(words, 0.5, 2)
	for _, pc := range pairs {
		t.Run(pc.name, func(t *testing.T) {
			src := put(t, pc.from, want)
			dst := put(t, a, filled(words, guard))
			if err := pc.from.Sync(); err != nil {
				t.Fatalf("source Sync: %v", err)
			}
			if err := a.CopyFrom(dst, pc.from, src, words*4); err != nil {
				t.Fatalf("CopyFrom: %v", err)
			}
			if err := pc.from.Memset32(src, math.Float32bits(-1), words); err != nil {
				t.Fatalf("source Memset32: %v", err)
			}
			sameFloats(t, "copied data", get(t, a, dst, words), want)
			sameFloats(t, "source after its Memset32", get(t, pc.from, src, 4), filled(4, -1))
		})
	}
	if err := a.CopyFrom(0, fakeDriver{}, 0, 4); err == nil {
		t.Errorf("CopyFrom of another kind of Driver: no error")
	}
}

// fakeDriver is a cuda.Driver that is not this package's.
type fakeDriver struct{ cuda.Driver }

// libraryNote is the reason to give when a library test skips.
func libraryNote(name string) string {
	for _, n := range LibraryNotes() {
		if strings.HasPrefix(n, name+":") {
			return n
		}
	}
	return name + ": not loaded"
}
