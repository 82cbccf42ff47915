package runner

import (
	"github.com/pipecast/pipecast/runner/comm"
	"github.com/pipecast/pipecast/runner/schedule"
	"github.com/pipecast/pipecast/tensor"
)

// Event is one op a device ran, or one block of a compute op when
// per-block timing is on: its times in nanoseconds from the step's start
// and the bytes it moved between devices.
type Event struct {
	Op schedule.Op
	// Block is the global index of the block a per-block event times, or
	// −1 for an event of the whole op.
	Block      int
	StartNanos int64
	EndNanos   int64
	Bytes      int64
}

// DeviceStep is what one device did in one step.
type DeviceStep struct {
	// Events are the device's events in the order they ended: an op's
	// per-block events come right before the op's own event.
	Events []Event
	// Memory holds the device's live bytes after the step and its peak
	// bytes during it, by category.
	Memory tensor.MemStats
	// Comm is the device's transfer counters since the trainer started.
	Comm comm.Stats
}

// StepResult is one training step.
type StepResult struct {
	Step    int
	Nanos   int64   // wall time of the step
	Loss    float64 // mean over the mini-batch
	Devices []DeviceStep
}
