//go:build cudaemu

package emu

// #include <stdlib.h>
// #include <string.h>
import "C"

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"unsafe"

	"github.com/pipecast/pipecast/tensor/cuda"
)

// guardBytes pad every allocation on both sides: the padding holds a
// canary that Launch and Free check, so that a kernel writing out of
// bounds fails the launch that did it, and it keeps every address
// 256-byte aligned, as cuMemAlloc's are.
const (
	guardBytes = 256
	canary     = 0xa5
	// fresh fills new memory: a NaN in float32 and float64 alike (and −1
	// as int32), since the GPU's memory is not zeroed either.
	fresh = 0xff
)

// span is an allocation: n bytes at base, within the C block at mem that
// has guardBytes more on each side.
type span struct {
	base cuda.Ptr
	n    int64
	mem  unsafe.Pointer
}

// Alloc returns n bytes filled with NaNs.
func (d *Driver) Alloc(n int64) (cuda.Ptr, error) {
	if n < 0 {
		return 0, fmt.Errorf("alloc of %d bytes", n)
	}
	if d.allocated.Load()+n > TotalBytes {
		return 0, fmt.Errorf("alloc of %d bytes with %d allocated: out of memory (the emulator pretends to have %d)", n, d.allocated.Load(), int64(TotalBytes))
	}
	total := (n + 2*guardBytes + guardBytes - 1) / guardBytes * guardBytes
	mem := C.aligned_alloc(guardBytes, C.size_t(total))
	if mem == nil {
		return 0, fmt.Errorf("alloc of %d bytes: out of host memory", n)
	}
	b := unsafe.Slice((*byte)(mem), total)
	fill(b[:guardBytes], canary)
	fill(b[guardBytes:guardBytes+n], fresh)
	fill(b[guardBytes+n:], canary)
	s := span{base: cuda.Ptr(uintptr(mem) + guardBytes), n: n, mem: mem}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		C.free(mem)
		return 0, errClosed
	}
	i := sort.Search(len(d.spans), func(i int) bool { return d.spans[i].base > s.base })
	d.spans = append(d.spans, span{})
	copy(d.spans[i+1:], d.spans[i:])
	d.spans[i] = s
	d.allocated.Add(n)
	return s.base, nil
}

// Free returns memory from Alloc; it fails for any other address, and
// when something wrote past the allocation's ends.
func (d *Driver) Free(p cuda.Ptr) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	i := sort.Search(len(d.spans), func(i int) bool { return d.spans[i].base >= p })
	if i == len(d.spans) || d.spans[i].base != p {
		return fmt.Errorf("free of %#x: not an allocation of this device", uintptr(p))
	}
	s := d.spans[i]
	d.spans = append(d.spans[:i], d.spans[i+1:]...)
	d.allocated.Add(-s.n)
	err := s.checkGuards()
	C.free(s.mem)
	if err != nil {
		return fmt.Errorf("free of %#x: %w", uintptr(p), err)
	}
	return nil
}

var errClosed = errors.New("emulated device closed")

// addr returns the host address of the n bytes at p, which must lie
// within one allocation.
func (d *Driver) addr(p cuda.Ptr, n int64) (unsafe.Pointer, error) {
	if n == 0 {
		return nil, nil // as cuMemcpy does nothing for no bytes, wherever
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, errClosed
	}
	s, ok := d.find(p)
	if !ok || n < 0 || int64(p-s.base)+n > s.n {
		return nil, fmt.Errorf("%d bytes at %#x: not within an allocation of this device", n, uintptr(p))
	}
	return unsafe.Add(s.mem, guardBytes+int(p-s.base)), nil
}

// find returns the allocation that holds p or ends at it. The caller
// holds d.mu.
func (d *Driver) find(p cuda.Ptr) (span, bool) {
	i := sort.Search(len(d.spans), func(i int) bool { return d.spans[i].base > p }) - 1
	if i < 0 || int64(p-d.spans[i].base) > d.spans[i].n {
		return span{}, false
	}
	return d.spans[i], true
}

// bytesAt returns the n bytes at p as a slice.
func (d *Driver) bytesAt(p cuda.Ptr, n int64) ([]byte, error) {
	a, err := d.addr(p, n)
	if err != nil || a == nil {
		return nil, err
	}
	return unsafe.Slice((*byte)(a), n), nil
}

// Upload copies src to dst.
func (d *Driver) Upload(dst cuda.Ptr, src []float32) error {
	b, err := d.bytesAt(dst, int64(len(src))*4)
	if err != nil {
		return fmt.Errorf("upload: %w", err)
	}
	copy(b, asBytes(src))
	return nil
}

// UploadInt32 copies src to dst.
func (d *Driver) UploadInt32(dst cuda.Ptr, src []int32) error {
	b, err := d.bytesAt(dst, int64(len(src))*4)
	if err != nil {
		return fmt.Errorf("upload int32: %w", err)
	}
	copy(b, asBytes(src))
	return nil
}

// Download copies src to dst.
func (d *Driver) Download(dst []float32, src cuda.Ptr) error {
	b, err := d.bytesAt(src, int64(len(dst))*4)
	if err != nil {
		return fmt.Errorf("download: %w", err)
	}
	copy(asBytes(dst), b)
	return nil
}

// DownloadFloat64 copies src to dst.
func (d *Driver) DownloadFloat64(dst []float64, src cuda.Ptr) error {
	b, err := d.bytesAt(src, int64(len(dst))*8)
	if err != nil {
		return fmt.Errorf("download float64: %w", err)
	}
	copy(asBytes(dst), b)
	return nil
}

// Copy copies n bytes from src to dst.
func (d *Driver) Copy(dst, src cuda.Ptr, n int64) error {
	to, err := d.bytesAt(dst, n)
	if err != nil {
		return fmt.Errorf("copy to: %w", err)
	}
	from, err := d.bytesAt(src, n)
	if err != nil {
		return fmt.Errorf("copy from: %w", err)
	}
	copy(to, from)
	return nil
}

// CopyFrom copies n bytes at src on from, another emulated device, to
// dst.
func (d *Driver) CopyFrom(dst cuda.Ptr, from cuda.Driver, src cuda.Ptr, n int64) error {
	f, ok := from.(*Driver)
	if !ok {
		return fmt.Errorf("copy from a %T: the emulator copies between emulated devices only", from)
	}
	to, err := d.bytesAt(dst, n)
	if err != nil {
		return fmt.Errorf("peer copy to: %w", err)
	}
	b, err := f.bytesAt(src, n)
	if err != nil {
		return fmt.Errorf("peer copy from: %w", err)
	}
	copy(to, b)
	return nil
}

// Memset32 sets n words at dst to v.
func (d *Driver) Memset32(dst cuda.Ptr, v uint32, n int64) error {
	a, err := d.addr(dst, n*4)
	if err != nil {
		return fmt.Errorf("memset: %w", err)
	}
	if a != nil {
		w := unsafe.Slice((*uint32)(a), n)
		for i := range w {
			w[i] = v
		}
	}
	return nil
}

// Close releases what is still allocated, and fails if anything was.
func (d *Driver) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	var total int64
	for _, s := range d.spans {
		total += s.n
		C.free(s.mem)
	}
	n := len(d.spans)
	d.spans = nil
	d.allocated.Store(0)
	if n > 0 {
		return fmt.Errorf("close: %d allocations (%d bytes) were not freed", n, total)
	}
	return nil
}

// canaries is what a guard holds.
var canaries = bytes.Repeat([]byte{canary}, guardBytes)

// checkGuards fails if a guard of s lost its canary.
func (s span) checkGuards() error {
	b := unsafe.Slice((*byte)(s.mem), guardBytes+s.n+guardBytes)
	if before := b[:guardBytes]; !bytes.Equal(before, canaries) {
		i := guardBytes - 1
		for before[i] == canary {
			i--
		}
		return fmt.Errorf("written %d bytes before its start", guardBytes-i)
	}
	if after := b[guardBytes+s.n:]; !bytes.Equal(after, canaries) {
		i := 0
		for after[i] == canary {
			i++
		}
		return fmt.Errorf("written %d bytes past the end of its %d", i, s.n)
	}
	return nil
}

// fill sets every byte of b, which is C memory, to v.
func fill(b []byte, v byte) {
	if len(b) > 0 {
		C.memset(unsafe.Pointer(&b[0]), C.int(v), C.size_t(len(b)))
	}
}

// asBytes returns the memory of s as bytes.
func asBytes[T float32 | int32 | float64](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(s[0])))
}
