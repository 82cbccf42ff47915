package tensor

import "sync"

// MemStats is a device's memory accounting: live and peak bytes per
// category and in total, like a GPU allocator's memory_allocated and
// max_memory_allocated. The total's peak is the peak of the sum, not the
// sum of the peaks.
type MemStats struct {
	LiveBytes      [NumCategories]int64
	PeakBytes      [NumCategories]int64
	LiveTotalBytes int64
	PeakTotalBytes int64
	Allocs         int64 // allocations since the device opened
}

// MemCounter keeps MemStats for a backend; it is safe for concurrent use.
// Backends embed one and call Alloc and Free as they hand memory out.
type MemCounter struct {
	mu sync.Mutex
	s  MemStats
	// tl records every change while a timeline runs (StartTimeline); nil
	// when none does, which costs Alloc, Free and Move one branch.
	tl *memTimeline
	// spare is the last timeline's buffer, which the next one reuses.
	spare []MemChange
}

// Alloc accounts bytes newly allocated in category c.
func (m *MemCounter) Alloc(c Category, bytes int64) {
	m.mu.Lock()
	m.s.Allocs++
	m.add(c, bytes)
	if m.tl != nil {
		m.tl.record(c, bytes)
	}
	m.mu.Unlock()
}

// Free accounts bytes returned from category c.
func (m *MemCounter) Free(c Category, bytes int64) {
	m.mu.Lock()
	m.s.LiveBytes[c] -= bytes
	m.s.LiveTotalBytes -= bytes
	if m.tl != nil {
		m.tl.record(c, -bytes)
	}
	m.mu.Unlock()
}

// Move accounts bytes that change category from one to another.
func (m *MemCounter) Move(from, to Category, bytes int64) {
	m.mu.Lock()
	m.s.LiveBytes[from] -= bytes
	m.s.LiveTotalBytes -= bytes
	m.add(to, bytes)
	if m.tl != nil {
		m.tl.record(from, -bytes)
		m.tl.record(to, bytes)
	}
	m.mu.Unlock()
}

func (m *MemCounter) add(c Category, bytes int64) {
	m.s.LiveBytes[c] += bytes
	m.s.LiveTotalBytes += bytes
	if m.s.LiveBytes[c] > m.s.PeakBytes[c] {
		m.s.PeakBytes[c] = m.s.LiveBytes[c]
	}
	if m.s.LiveTotalBytes > m.s.PeakTotalBytes {
		m.s.PeakTotalBytes = m.s.LiveTotalBytes
	}
}

// Stats returns a snapshot of the accounting.
func (m *MemCounter) Stats() MemStats {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.s
}

// ResetPeak sets every peak to the current live bytes, so that the peak of
// one step can be measured apart from the steps before it.
func (m *MemCounter) ResetPeak() {
	m.mu.Lock()
	m.s.PeakBytes = m.s.LiveBytes
	m.s.PeakTotalBytes = m.s.LiveTotalBytes
	m.mu.Unlock()
}
