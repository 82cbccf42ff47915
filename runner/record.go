package runner

import (
	"slices"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/profiler"
)

// Record returns the run as a measured run record, built by
// profiler.Build from the run's environment, configuration, partition and
// every device's events, memory and losses.
func (r *Result) Record() profiler.Record {
	run := profiler.Run{
		Kind:           profiler.KindMeasured,
		Env:            r.environment(),
		Bounds:         r.Partition,
		Owners:         r.Owners,
		Blocks:         config.BlockCosts(r.Model),
		Oversubscribed: r.Oversubscribed,
		Steps:          make([]profiler.RunStep, len(r.Steps)),
	}
	sized := r.Config.ModelConfig
	if r.Model != nil {
		sized = r.Model.Config
	}
	run.Config = r.Config.RecordConfig(sized, len(r.Steps), len(r.Warmup))
	for i, s := range r.Steps {
		run.Steps[i] = profiler.RunStep{Step: s.Step, WallNanos: s.Nanos, Loss: s.Loss, Devices: make([]profiler.DeviceActivity, len(s.Devices))}
		for d, ds := range s.Devices {
			run.Steps[i].Devices[d] = profiler.DeviceActivityOf(ds.Memory, ds.Events)
			run.Steps[i].Devices[d].MemoryTrack = ds.MemTrack
		}
	}
	for _, s := range r.Warmup {
		run.WarmupLosses = append(run.WarmupLosses, s.Loss)
	}
	run.SentBytes, run.ReceivedBytes = r.commDuringSteps()
	return profiler.Build(run)
}

// environment describes the machine, the build and the devices.
func (r *Result) environment() profiler.Environment {
	env := profiler.LocalEnvironment()
	env.Cores = r.Cores
	env.Backend, env.HugePages = r.Config.Backend, r.HugePages
	env.PeakRSSBytes = profiler.PeakRSSBytes()
	env.Calibration = r.Calibration
	env.Interference = r.Interference
	if len(r.ProbeNanos) > 0 {
		env.Probe = &profiler.Probe{Nanos: slices.Clone(r.ProbeNanos)}
	}
	env.Transport = r.Transport
	if env.Transport == "" {
		env.Transport = profiler.TransportInProcess
	}
	env.TransportVersion, env.Ranks, env.ClockResidualNanos = r.TransportVersion, r.Ranks, r.ClockResidualNanos
	for i, n := range r.DeviceNames {
		info := profiler.DeviceInfo{Name: n, Threads: r.Config.ThreadsOf(i)}
		if i < len(r.GPUs) {
			info.GPU = r.GPUs[i]
		}
		env.Devices = append(env.Devices, info)
	}
	return env
}

// commDuringSteps returns the bytes each device sent and received during
// the measured steps: the counters are cumulative since the trainer
// started, so the last warm-up step's counts (zero without warm-up) are
// subtracted.
func (r *Result) commDuringSteps() (sent, received []int64) {
	if len(r.Steps) == 0 {
		return nil, nil
	}
	last := r.Steps[len(r.Steps)-1].Devices
	sent, received = make([]int64, len(last)), make([]int64, len(last))
	for d, ds := range last {
		sent[d], received[d] = ds.Comm.SentBytes, ds.Comm.ReceivedBytes
		if len(r.Warmup) > 0 {
			before := r.Warmup[len(r.Warmup)-1].Devices[d].Comm
			sent[d] -= before.SentBytes
			received[d] -= before.ReceivedBytes
		}
	}
	return sent, received
}
