package runner

import (
	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/runner/comm"
	"github.com/pipecast/pipecast/tensor"
)

// DeviceStep is what one device did in one step.
type DeviceStep struct {
	// Events are the device's events in the order they ended, times in
	// nanoseconds from the step's start: an op's per-block events come
	// right before the op's own, and the whole-op events are the
	// device's program in order.
	Events []profiler.Event
	// Memory holds the device's live bytes after the step and its peak
	// bytes during it, by category.
	Memory tensor.MemStats
	// Comm is the device's transfer counters since the trainer started.
	Comm comm.Stats
	// MemTrack is the device's live memory over the step, change by
	// change, in the one step the trainer tracks (nil in the others).
	MemTrack *profiler.MemoryTrack
}

// StepResult is one training step.
type StepResult struct {
	Step    int
	Nanos   int64   // wall time of the step
	Loss    float64 // mean over the mini-batch
	Devices []DeviceStep
	// startNanos and endNanos are the step's start and end on this
	// process's tensor clock, which a multi-process run moves onto rank
	// 0's.
	startNanos, endNanos int64
}
