package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"

	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/runner/comm"
	"github.com/pipecast/pipecast/tensor"
)

// A multi-process run (RunOptions.Group) runs one device per process.
// Every process steps its own device; rank 0 then gathers what the
// others did and moves their times onto its own clock, so that its
// Result is the run's as an in-process run's would be.

// rankReport is what one rank sends rank 0 after a run.
type rankReport struct {
	Info profiler.RankInfo
	// CPUs are the CPUs the rank may run on (nil: unknown; then Cores,
	// its count of them, stands alone).
	CPUs       []int
	Cores      int
	DeviceName string
	GPU        *profiler.GPUInfo // nil for a device that is not a GPU
	HugePages  string
	Warmup     []rankStep
	Steps      []rankStep
}

// rankStep is one step of one rank's device: its start and end on the
// rank's clock, the loss it computed, and its device's step.
type rankStep struct {
	Step       int
	Start, End int64
	Loss       float64
	Memory     tensor.MemStats
	Comm       comm.Stats
	Events     []profiler.Event
	MemTrack   *profiler.MemoryTrack `json:",omitempty"`
}

// rankInfo describes this process for the record.
func rankInfo(g comm.Group, threads int) profiler.RankInfo {
	host, _ := os.Hostname()
	if h, ok := g.(interface{ Host() string }); ok && h.Host() != "" {
		host = h.Host()
	}
	return profiler.RankInfo{Rank: g.Rank(), Host: host, PID: os.Getpid(), CPUModel: profiler.CPUModel(), Threads: threads}
}

func reportSteps(steps []StepResult) []rankStep {
	out := make([]rankStep, len(steps))
	for i, s := range steps {
		d := s.Devices[0]
		out[i] = rankStep{Step: s.Step, Start: s.startNanos, End: s.endNanos, Loss: s.Loss, Memory: d.Memory, Comm: d.Comm, Events: d.Events, MemTrack: d.MemTrack}
	}
	return out
}

// gatherRun sends every rank's steps to rank 0, which replaces res's
// steps (its own device's) with the whole run's: each step from the
// earliest start to the latest end of any rank, every rank's events on
// that axis, the losses summed. offsets are each rank's clock minus rank
// 0's (rank 0 only). Other ranks keep their own device's steps.
func gatherRun(ctx context.Context, g comm.Group, res *Result, offsets []int64) error {
	rep := rankReport{Info: rankInfo(g, res.Config.ThreadsOf(g.Rank())), CPUs: processCPUs(), Cores: runtime.NumCPU(), HugePages: res.HugePages,
		Warmup: reportSteps(res.Warmup), Steps: reportSteps(res.Steps)}
	if len(res.DeviceNames) > 0 {
		rep.DeviceName = res.DeviceNames[0]
	}
	if len(res.GPUs) > 0 {
		rep.GPU = res.GPUs[0]
	}
	b, err := json.Marshal(rep)
	if err != nil {
		return fmt.Errorf("gather the run: %w", err)
	}
	all, err := g.Gather(ctx, 0, b)
	if err != nil {
		return fmt.Errorf("gather the run: %w", err)
	}
	if g.Rank() != 0 {
		return nil
	}
	reps := make([]rankReport, len(all))
	for r, b := range all {
		if err := json.Unmarshal(b, &reps[r]); err != nil {
			return fmt.Errorf("gather the run: rank %d's report: %w", r, err)
		}
		if len(reps[r].Steps) != len(res.Steps) || len(reps[r].Warmup) != len(res.Warmup) {
			return fmt.Errorf("gather the run: rank %d ran %d+%d steps, rank 0 %d+%d",
				r, len(reps[r].Warmup), len(reps[r].Steps), len(res.Warmup), len(res.Steps))
		}
	}
	res.DeviceNames, res.GPUs, res.Ranks = nil, nil, nil
	for _, rep := range reps {
		res.DeviceNames = append(res.DeviceNames, rep.DeviceName)
		res.GPUs = append(res.GPUs, rep.GPU)
		res.Ranks = append(res.Ranks, rep.Info)
	}
	res.Cores, res.Oversubscribed = hostCores(reps)
	res.Warmup = mergeSteps(reps, offsets, func(r rankReport) []rankStep { return r.Warmup })
	res.Steps = mergeSteps(reps, offsets, func(r rankReport) []rankStep { return r.Steps })
	return nil
}

// mergeSteps puts the ranks' steps onto rank 0's clock.
func mergeSteps(reps []rankReport, offsets []int64, steps func(rankReport) []rankStep) []StepResult {
	n := len(steps(reps[0]))
	out := make([]StepResult, n)
	for i := range n {
		var start, end int64
		for r, rep := range reps {
			s := steps(rep)[i]
			s0, s1 := s.Start-offsets[r], s.End-offsets[r]
			if r == 0 || s0 < start {
				start = s0
			}
			end = max(end, s1)
		}
		res := StepResult{Step: steps(reps[0])[i].Step, Nanos: end - start, Devices: make([]DeviceStep, len(reps)), startNanos: start, endNanos: end}
		for r, rep := range reps {
			s := steps(rep)[i]
			shift := s.Start - offsets[r] - start
			evs := make([]profiler.Event, len(s.Events))
			for j, e := range s.Events {
				e.StartNanos += shift
				e.EndNanos += shift
				evs[j] = e
			}
			res.Loss += s.Loss
			res.Devices[r] = DeviceStep{Events: evs, Memory: s.Memory, Comm: s.Comm, MemTrack: s.MemTrack}
			if s.MemTrack != nil {
				s.MemTrack.Shift(shift) // the events' shift; s is this merge's copy
			}
		}
		out[i] = res
	}
	return out
}

// hostCores returns the cores the ranks could run on, summed over their
// hosts (on each host the union of its ranks' CPUs), and whether any
// host's ranks ask for more threads than that host's ranks have CPUs:
// mpirun binding each of two ranks to a core of its own is not
// oversubscribed, two ranks of two threads sharing two cores is.
func hostCores(reps []rankReport) (cores int, oversubscribed bool) {
	type host struct {
		cpus    map[int]bool
		counted int // cores of ranks that did not list their CPUs
		threads int
	}
	hosts := map[string]*host{}
	var order []string
	for _, r := range reps {
		h, ok := hosts[r.Info.Host]
		if !ok {
			h = &host{cpus: map[int]bool{}}
			hosts[r.Info.Host] = h
			order = append(order, r.Info.Host)
		}
		h.threads += r.Info.Threads
		if r.CPUs == nil {
			h.counted = max(h.counted, r.Cores)
		}
		for _, c := range r.CPUs {
			h.cpus[c] = true
		}
	}
	for _, name := range order {
		h := hosts[name]
		n := max(len(h.cpus), h.counted)
		cores += n
		oversubscribed = oversubscribed || h.threads > n
	}
	return cores, oversubscribed
}
