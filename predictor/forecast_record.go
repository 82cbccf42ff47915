package predictor

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/internal/buildinfo"
	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/schedule"
)

// record returns the forecast as a predicted run record of one step,
// built by profiler.Build like a measured one.
func (s *simulation) record(tl *schedule.Timeline) profiler.Record {
	env := s.environment()
	run := profiler.Run{
		Kind:   profiler.KindPredicted,
		Env:    env,
		Config: s.cfg.RecordConfig(s.model.Config, 1, 0),
		Blocks: config.BlockCosts(s.model),
		Bounds: s.cfg.Bounds,
		// A forecast models K devices that each have their own T
		// threads' cores, whatever the machine the data came from: it is
		// never oversubscribed, even where a real run on that machine
		// would be.
		Oversubscribed:  false,
		PredictedRelErr: s.c.RelErr(),
	}
	// Job device d runs program device d mod K: with R replicas, each at
	// the same times as replica 0's (the meta run holds them all).
	k := len(s.prog.Devices)
	step := profiler.RunStep{Step: 0, WallNanos: nanos(tl.Makespan), Devices: make([]profiler.DeviceActivity, s.prog.Replicas()*k)}
	for d := range step.Devices {
		ops := s.prog.Devices[d%k]
		var ds profiler.DeviceActivity
		var sent, received int64
		if d < len(s.meta.devices) {
			m := s.meta.devices[d]
			ds = profiler.DeviceActivityOf(m.Memory, nil)
			sent, received = m.Comm.SentBytes, m.Comm.ReceivedBytes
		}
		for i, o := range ops {
			p := s.ops[d%k][keyOf(o)]
			start, end := tl.Start[d%k][i], tl.End[d%k][i]
			ds.Events = appendBlockEvents(ds.Events, d, o, p, start, end)
			ds.Events = append(ds.Events, profiler.OpEvent(0, d, o, profiler.WholeOp, nanos(start), nanos(end), p.bytes))
		}
		step.Devices[d] = ds
		run.SentBytes, run.ReceivedBytes = append(run.SentBytes, sent), append(run.ReceivedBytes, received)
	}
	run.Steps = []profiler.RunStep{step}
	return profiler.Build(run)
}

// appendBlockEvents appends the per-block events of a compute op that
// ran from start to end: its blocks in run order, each taking its fitted
// share of the op (the op's overhead spread over them in proportion).
func appendBlockEvents(evs []profiler.Event, d int, o schedule.Op, p *pricedOp, start, end float64) []profiler.Event {
	if len(p.blocks) == 0 {
		return evs
	}
	var sum float64
	for _, t := range p.times {
		sum += t
	}
	t := start
	for j, b := range p.blocks {
		// Blocks fitted at zero share the op evenly.
		dt := (end - start) / float64(len(p.blocks))
		if sum > 0 {
			dt = (end - start) * p.times[j] / sum
		}
		if j == len(p.blocks)-1 {
			dt = end - t // no round-off gap before the op's end
		}
		evs = append(evs, profiler.OpEvent(0, d, o, b, nanos(t), nanos(t+dt), 0))
		t += dt
	}
	return evs
}

// environment is the data's environment with this build's version, and
// the forecast's devices.
func (s *simulation) environment() profiler.Environment {
	env := sourceEnv(s.c)
	env.Version, env.Revision = buildinfo.Version(), buildinfo.Revision()
	env.Backend = s.c.Key.Backend
	// A forecast does not run: no process to measure. It says which
	// interference it applied (none: no measurement).
	env.PeakRSSBytes = 0
	env.Interference = nil
	if lv := s.c.Interference(); len(lv) > 1 {
		env.Interference = &profiler.Interference{Work: "applied: the medians of the single-device records' measurements", Levels: lv}
	}
	env.Devices = nil
	for d := range s.prog.Replicas() * len(s.prog.Devices) {
		env.Devices = append(env.Devices, profiler.DeviceInfo{Name: fmt.Sprintf("%s:%d", env.Backend, d), Threads: s.cfg.ThreadsOf(d)})
	}
	return env
}

// sourceEnv returns the environment of the records c was fitted to, when
// the cost model keeps it (an Env method), else this machine's: a
// forecast is for the machine that measured its data, which is usually
// the one that forecasts.
func sourceEnv(c *CostModel) profiler.Environment {
	if src, ok := any(c).(interface{ Env() profiler.Environment }); ok {
		env := src.Env()
		if env.Calibration != nil {
			cal := *env.Calibration
			cal.Samples = slices.Clone(cal.Samples)
			env.Calibration = &cal
		}
		return env
	}
	host, _ := os.Hostname()
	return profiler.Environment{
		Host: host, OS: runtime.GOOS, Arch: runtime.GOARCH, Cores: runtime.NumCPU(), GoVersion: runtime.Version(),
	}
}

// nanos rounds a simulated time to whole nanoseconds.
func nanos(t float64) int64 { return int64(math.Round(t)) }
