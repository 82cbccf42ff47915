package predictor

import (
	"fmt"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/schedule"
)

// Replay re-times a measured record's own program with its own op
// durations: every step's whole-op events give each op its measured
// duration (a collective the time from the last device's arrival to its
// end, since the simulator, like the transport, starts a collective when
// every device has reached it), schedule.Simulate replays the step, and
// Replay returns the median of the steps' makespans. Comparing it with the
// measured median step time isolates what the simulator's logic adds or
// misses from what the fitted costs do.
func Replay(rec profiler.Record) (makespanNanos float64, err error) {
	prog, err := recordProgram(&rec)
	if err != nil {
		return 0, fmt.Errorf("replay %s: %w", rec.ID, err)
	}
	// events[step][device] are the whole-op events, in program order.
	events := map[int][][]profiler.Event{}
	for _, e := range rec.Events {
		if e.Block != -1 {
			continue
		}
		if e.Device < 0 || e.Device >= len(prog.Devices) {
			return 0, fmt.Errorf("replay %s: event of device %d in a run of %d devices", rec.ID, e.Device, len(prog.Devices))
		}
		if events[e.Step] == nil {
			events[e.Step] = make([][]profiler.Event, len(prog.Devices))
		}
		events[e.Step][e.Device] = append(events[e.Step][e.Device], e)
	}
	if len(events) == 0 {
		return 0, fmt.Errorf("replay %s: the record holds no events", rec.ID)
	}
	var spans []float64
	for step, devs := range events {
		costs, err := replayCosts(prog, devs)
		if err != nil {
			return 0, fmt.Errorf("replay %s: step %d: %w", rec.ID, step, err)
		}
		tl, err := schedule.Simulate(prog, func(d int, o schedule.Op) float64 { return costs[d][keyOf(o)] })
		if err != nil {
			return 0, fmt.Errorf("replay %s: step %d: %w", rec.ID, step, err)
		}
		spans = append(spans, tl.Makespan)
	}
	return profiler.Median(spans), nil
}

// recordProgram returns the program the run of rec ran: its schedule's,
// with the all-reduces of its model's tied parameters at its partition.
func recordProgram(rec *profiler.Record) (*schedule.Program, error) {
	cfg, err := config.FromRecord(rec)
	if err != nil {
		return nil, err
	}
	model, err := models.Describe(cfg.Model, cfg.ModelConfig)
	if err != nil {
		return nil, err
	}
	return cfg.Program(model, cfg.Bounds)
}

// replayCosts returns each op's measured duration in one step, checking
// that the events are the program's ops in order.
func replayCosts(prog *schedule.Program, devs [][]profiler.Event) ([]map[opKey]float64, error) {
	// lastArrival[g][i] is when the last device of group g reached the
	// group's i-th collective: it starts there on every device of g.
	lastArrival := make([][]int64, len(prog.Groups))
	for d, ops := range prog.Devices {
		if len(devs[d]) != len(ops) {
			return nil, fmt.Errorf("device %d: %d events for %d ops", d, len(devs[d]), len(ops))
		}
		n := make([]int, len(prog.Groups))
		for i, o := range ops {
			if e := devs[d][i]; e.Op != o.Kind.String() {
				return nil, fmt.Errorf("device %d: event %d is %s, the program's op %v", d, i, e.Op, o)
			}
			if o.Kind.Collective() {
				g := o.Group
				if g < 0 || g >= len(prog.Groups) {
					return nil, fmt.Errorf("device %d: op %d (%v) names group %d of %d", d, i, o, g, len(prog.Groups))
				}
				if n[g] == len(lastArrival[g]) {
					lastArrival[g] = append(lastArrival[g], 0)
				}
				lastArrival[g][n[g]] = max(lastArrival[g][n[g]], devs[d][i].StartNanos)
				n[g]++
			}
		}
	}
	costs := make([]map[opKey]float64, len(prog.Devices))
	for d, ops := range prog.Devices {
		costs[d] = map[opKey]float64{}
		n := make([]int, len(prog.Groups))
		for i, o := range ops {
			e := devs[d][i]
			start := e.StartNanos
			if o.Kind.Collective() {
				start = lastArrival[o.Group][n[o.Group]]
				n[o.Group]++
			}
			costs[d][keyOf(o)] = float64(max(e.EndNanos-start, 0))
		}
	}
	return costs, nil
}
