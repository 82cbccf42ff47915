package profiler

// Recorder collects the events of one device. Its buffer is allocated up
// front, so recording an event in a timed step neither allocates nor
// disturbs the garbage collector; if the buffer fills it grows like any
// slice, and Growths counts how often, so that a caller can size the
// buffer and a benchmark can assert that it never grew.
//
// Times of recorded events are the tensor clock's: nanoseconds of
// tensor.Nanotime, which Device.Now returns after the device's queued
// work has completed. That clock is monotonic and common to all devices
// of a process, so events of different devices share one time axis;
// AppendRelative moves them to a step's origin, as a Record stores them.
//
// A nil *Recorder is the recorder that is off: Record does nothing and
// Events returns nil, so the runner calls it unconditionally and its
// overhead can be measured by comparing the two. A Recorder belongs to
// one goroutine at a time, like the device it records.
type Recorder struct {
	events  []Event
	growths int
}

// NewRecorder returns a recorder whose buffer holds capacity events
// before it grows.
func NewRecorder(capacity int) *Recorder {
	if capacity < 0 {
		panic("profiler: recorder capacity is negative")
	}
	return &Recorder{events: make([]Event, 0, capacity)}
}

// Record appends e. It allocates only when the buffer is full.
func (r *Recorder) Record(e Event) {
	if r == nil {
		return
	}
	if len(r.events) == cap(r.events) {
		r.growths++
	}
	r.events = append(r.events, e)
}

// Enabled reports whether r records, that is, whether it is not nil.
// Callers use it to skip work that only feeds Record, such as reading
// the clock around a block.
func (r *Recorder) Enabled() bool { return r != nil }

// Events returns the recorded events in the order recorded. The slice is
// r's buffer: it is valid until the next Record or Reset, and callers
// that keep events copy them (AppendRelative does).
func (r *Recorder) Events() []Event {
	if r == nil {
		return nil
	}
	return r.events
}

// Len returns the number of recorded events.
func (r *Recorder) Len() int {
	if r == nil {
		return 0
	}
	return len(r.events)
}

// Growths returns how many times the buffer was full when an event
// arrived, since NewRecorder; Reset keeps the count.
func (r *Recorder) Growths() int {
	if r == nil {
		return 0
	}
	return r.growths
}

// Reset forgets the recorded events and keeps the buffer, grown or not,
// for the next step.
func (r *Recorder) Reset() {
	if r == nil {
		return
	}
	r.events = r.events[:0]
}

// AppendRelative appends copies of the recorded events to dst with their
// times made relative to origin, normally the step's start on the
// tensor clock, and returns the extended slice.
func (r *Recorder) AppendRelative(dst []Event, origin int64) []Event {
	for _, e := range r.Events() {
		e.StartNanos -= origin
		e.EndNanos -= origin
		dst = append(dst, e)
	}
	return dst
}
