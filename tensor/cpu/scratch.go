package cpu

import (
	"sync"

	"github.com/pipecast/pipecast/tensor"
)

// scratchKeep is how many released scratch buffers a device keeps for
// the next kernels: a convolution holds one at a time and its products
// one more, so a few cover a training step without allocating.
const scratchKeep = 4

// spares are a device's released scratch buffers, kept for reuse. A
// device's own list, not a sync.Pool: a pool is emptied by every
// garbage collection (and, under the race detector, at random), which
// made a step's allocations vary from run to run.
type spares struct {
	mu   sync.Mutex
	bufs [][]float32
}

// take removes and returns the smallest kept buffer that holds n
// elements, or nil.
func (s *spares) take(n int) []float32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	best := -1
	for i, b := range s.bufs {
		if cap(b) >= n && (best < 0 || cap(b) < cap(s.bufs[best])) {
			best = i
		}
	}
	if best < 0 {
		return nil
	}
	b := s.bufs[best]
	s.bufs = append(s.bufs[:best], s.bufs[best+1:]...)
	return b
}

// give keeps b, dropping the smallest kept buffer when scratchKeep are
// kept already.
func (s *spares) give(b []float32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.bufs) < scratchKeep {
		s.bufs = append(s.bufs, b)
		return
	}
	small := 0
	for i := range s.bufs {
		if cap(s.bufs[i]) < cap(s.bufs[small]) {
			small = i
		}
	}
	if cap(b) > cap(s.bufs[small]) {
		s.bufs[small] = b
	}
}

// scratch returns n elements of recycled scratch memory, accounted as
// Workspace on d until release is called. Its contents are undefined.
func (d *Device) scratch(n int) (buf []float32, release func()) {
	if n == 0 {
		return nil, func() {}
	}
	buf = d.spares.take(n)
	if buf == nil {
		buf = make([]float32, n)
		adviseHugePages(buf)
	}
	bytes := int64(n) * tensor.BytesPerElement
	d.mem.Alloc(tensor.Workspace, bytes)
	return buf[:n], func() {
		d.mem.Free(tensor.Workspace, bytes)
		d.spares.give(buf)
	}
}
