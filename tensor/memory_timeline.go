package tensor

// MemCoalesceNanos is how close in time two changes must be for a
// timeline to merge them into one: consecutive changes of the same
// category and the same sign closer than this are kept as their sum.
// Merging them loses no peak: live bytes move monotonically through
// both, in their category and in total, so the value after the sum (an
// allocation's) or before it (a release's) is the extreme either way.
const MemCoalesceNanos = 1000

// MemChange is one change of a device's live bytes in a timeline.
type MemChange struct {
	// Nanos is the time of the change on the timeline's clock.
	Nanos int64
	// Bytes is the change, positive for bytes allocated into Category
	// (or moved into it), negative for bytes returned (or moved out).
	Bytes    int64
	Category Category
}

// MemTimeline is what a MemCounter recorded between StartTimeline and
// StopTimeline: the live bytes when it started and every change after,
// in the order the counter applied them. Replaying the changes from
// StartLiveBytes reproduces the live bytes at every change and, unless
// Dropped is positive, End's peaks exactly.
type MemTimeline struct {
	// StartLiveBytes are the live bytes by category when the timeline
	// started.
	StartLiveBytes [NumCategories]int64
	// Changes are the changes in order, coalesced (see MemCoalesceNanos).
	Changes []MemChange
	// Coalesced counts the changes merged into the one before them;
	// Dropped the changes that found the buffer full and were left out,
	// so that a replay of Changes stops short of them.
	Coalesced, Dropped int64
	// End is the accounting when the timeline stopped; its peaks are
	// those since the timeline started.
	End MemStats
}

// memTimeline is a running timeline: its clock and its buffer, which
// never grows.
type memTimeline struct {
	clock func() int64
	out   MemTimeline
}

// StartTimeline starts recording every change of the live bytes, with
// its time from clock (called under the counter's lock, so it must be
// cheap and must not touch the counter), into a buffer of capacity
// changes; changes beyond it are counted as dropped. The buffer is the
// previous timeline's where that one was as large, so that tracking a
// step allocates nothing after the first: the Changes a StopTimeline
// returned stay valid only until the next StartTimeline. It
// resets the peaks to the live bytes, as ResetPeak does, so that the
// peaks when the timeline stops are its own. Starting a timeline while
// one runs discards the running one.
func (m *MemCounter) StartTimeline(clock func() int64, capacity int) {
	if capacity < 0 {
		panic("tensor: timeline capacity is negative")
	}
	tl := &memTimeline{clock: clock}
	m.mu.Lock()
	if cap(m.spare) >= capacity {
		tl.out.Changes = m.spare[:0:capacity]
	} else {
		tl.out.Changes = make([]MemChange, 0, capacity)
	}
	m.spare = nil
	m.s.PeakBytes = m.s.LiveBytes
	m.s.PeakTotalBytes = m.s.LiveTotalBytes
	tl.out.StartLiveBytes = m.s.LiveBytes
	m.tl = tl
	m.mu.Unlock()
}

// StopTimeline stops the running timeline and returns what it recorded,
// or false if none was running.
func (m *MemCounter) StopTimeline() (MemTimeline, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	tl := m.tl
	if tl == nil {
		return MemTimeline{}, false
	}
	m.tl = nil
	m.spare = tl.out.Changes
	tl.out.End = m.s
	return tl.out, true
}

// record appends a change of bytes in category c, merging it into the
// previous change where that loses no peak (see MemCoalesceNanos). It
// runs under the counter's lock and never allocates.
func (tl *memTimeline) record(c Category, bytes int64) {
	if bytes == 0 {
		return
	}
	now := tl.clock()
	ch := tl.out.Changes
	if n := len(ch); n > 0 {
		last := &ch[n-1]
		if last.Category == c && (last.Bytes > 0) == (bytes > 0) && now-last.Nanos < MemCoalesceNanos {
			last.Bytes += bytes
			tl.out.Coalesced++
			return
		}
	}
	if len(ch) == cap(ch) {
		tl.out.Dropped++
		return
	}
	tl.out.Changes = append(ch, MemChange{Nanos: now, Bytes: bytes, Category: c})
}

// MemCounted is a device whose memory accounting is a MemCounter, which
// it hands out so that code holding only the Device can start and stop
// the counter's timeline. Every backend of this module is one.
type MemCounted interface {
	MemCounter() *MemCounter
}

// CounterOf returns the MemCounter behind d's memory accounting, or nil
// if d's backend keeps its accounting otherwise.
func CounterOf(d Device) *MemCounter {
	if c, ok := d.(MemCounted); ok {
		return c.MemCounter()
	}
	return nil
}

// ReplayPeaks returns the peaks of live bytes that replaying changes
// from start gives: per category and of the total, each at least its
// starting value.
func ReplayPeaks(start [NumCategories]int64, changes []MemChange) (peaks [NumCategories]int64, peakTotal int64) {
	live := start
	var total int64
	for _, b := range start {
		total += b
	}
	peaks, peakTotal = live, total
	for _, ch := range changes {
		live[ch.Category] += ch.Bytes
		total += ch.Bytes
		peaks[ch.Category] = max(peaks[ch.Category], live[ch.Category])
		peakTotal = max(peakTotal, total)
	}
	return peaks, peakTotal
}
