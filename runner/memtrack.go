package runner

import (
	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/tensor"
)

// memTrackCapacity bounds the changes of live memory a device records in
// the step whose memory is tracked: 24 bytes each, allocated when the
// step starts. A step of resnet50 at width 0.25 on two devices records
// a few thousand; changes beyond the bound are counted as dropped in the
// record.
const memTrackCapacity = 1 << 16

// trackMemory makes the trainer record every device's live memory,
// change by change, in the step numbered step (a StepResult.Step value),
// and in no other.
func (t *Trainer) trackMemory(step int) { t.memTrackAt = step + 1 }

// startMemTrack starts the timeline of w's device's memory if step is
// the tracked one. The timeline resets the device's peaks, so that its
// replay gives the step's peaks exactly.
func (t *Trainer) startMemTrack(w *worker, step int) {
	if t.memTrackAt != step+1 {
		return
	}
	if c := tensor.CounterOf(w.dev); c != nil {
		c.StartTimeline(tensor.Nanotime, memTrackCapacity)
	}
}

// stopMemTrack stops the timeline of w's device's memory, if one runs,
// and returns it with times from start, the step's start on the tensor
// clock; nil if none ran.
func stopMemTrack(w *worker, start int64) *profiler.MemoryTrack {
	c := tensor.CounterOf(w.dev)
	if c == nil {
		return nil
	}
	tl, ok := c.StopTimeline()
	if !ok {
		return nil
	}
	return profiler.MemoryTrackOf(tl, start)
}
