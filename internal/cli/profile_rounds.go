package cli

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/profiler"
)

// plannedRun is one run of a sweep: configuration index of the sweep's
// list in a round, from 1.
type plannedRun struct {
	cfg   config.Config
	index int
	round int
}

// planRounds returns the runs of cfgs, round by round: configuration i
// once in each round from first[i] (1 for a fresh sweep) to rounds. With
// more than one round each round runs in an order of its own, shuffled
// from seed and the round's number, so that a slow spell of a shared
// machine falls on every configuration alike rather than on those the
// list puts next to it; a single round keeps the list's order.
func planRounds(cfgs []config.Config, first []int, rounds int, seed uint64) []plannedRun {
	var out []plannedRun
	for r := 1; r <= rounds; r++ {
		var round []plannedRun
		for i, c := range cfgs {
			if r >= first[i] {
				round = append(round, plannedRun{cfg: c, index: i, round: r})
			}
		}
		if rounds > 1 {
			rng := rand.New(rand.NewPCG(seed, uint64(r)))
			rng.Shuffle(len(round), func(a, b int) { round[a], round[b] = round[b], round[a] })
		}
		out = append(out, round...)
	}
	return out
}

// balanceTimes are the block times a sweep's partitions by time balance,
// by workload: measured once, before the workload's first run, and
// shared by every run of it, of any round, schedule or device count, so
// that rounds repeat one configuration and schedules compare on one
// split. (Times measured for each run would split the model at different
// blocks from run to run with the machine's noise.)
type balanceTimes map[string][]float64

// timesKey identifies the runs whose partitions balance the same block
// times: the model at its size (resolved, so that a sweep's "the model's
// default classes" matches its records' 1000), its blocks measured at the
// same micro-batch size on the same backend, threads and transport.
func timesKey(c config.Config) string {
	mc := c.ModelConfig
	if r, err := models.Resolved(c.Model, mc); err == nil {
		mc = r
	}
	return fmt.Sprintf("%s %+v m=%d %s t=%d %s", c.Model, mc, c.MicroBatchSize(), c.Backend, c.Threads, c.Transport)
}

// needsTimes reports whether c balances by times it does not hold.
func needsTimes(c config.Config) bool {
	return c.Balance.Timed() && c.Bounds == nil && c.BalanceTimes == nil
}

// sharing returns the workloads of cfgs that some multi-stage
// configuration balances by time: those the sweep measures block times
// for. A workload run only on one stage needs none.
func sharing(cfgs []config.Config) map[string]bool {
	out := map[string]bool{}
	for _, c := range cfgs {
		if needsTimes(c) && c.Stages() > 1 {
			out[timesKey(c)] = true
		}
	}
	return out
}

// speedsKey identifies the runs whose devices' speeds are the same
// measurement: the workload of timesKey on the same per-device threads.
// Its entry in balanceTimes holds the speeds.
func speedsKey(c config.Config) string {
	return timesKey(c) + " speeds of threads " + profiler.FormatThreads(c.DeviceThreads)
}

// measurer measures what a sweep's runs share: a workload's block times
// and, for devices whose threads differ, their speeds (the workload's
// block times, when measured, being the reference's).
type measurer struct {
	times  func(config.Config) ([]float64, error)
	speeds func(config.Config) ([]float64, error)
}

// apply returns c with its workload's block times and its devices'
// speeds, measuring them first if the workload needs them and has none
// yet.
func (b balanceTimes) apply(c config.Config, shared map[string]bool, m measurer) (config.Config, error) {
	c, err := b.applyTimes(c, shared, m.times)
	if err != nil || len(c.DeviceThreads) == 0 || c.Speeds != nil {
		return c, err
	}
	k := speedsKey(c)
	if b[k] == nil {
		s, err := m.speeds(c)
		if err != nil {
			return c, fmt.Errorf("device speeds: %w", err)
		}
		b[k] = s
	}
	c.Speeds = slices.Clone(b[k])
	return c, nil
}

// applyTimes returns c with its workload's block times, measuring them
// with measure first if the workload needs them and has none yet.
func (b balanceTimes) applyTimes(c config.Config, shared map[string]bool, measure func(config.Config) ([]float64, error)) (config.Config, error) {
	if !needsTimes(c) {
		return c, nil
	}
	k := timesKey(c)
	if b[k] == nil && shared[k] {
		t, err := measure(c)
		if err != nil {
			return c, fmt.Errorf("balance by time: %w", err)
		}
		b[k] = t
	}
	c.BalanceTimes = slices.Clone(b[k])
	return c, nil
}

// keep records the block times a record's partition balanced as its
// workload's, unless the workload has some: a resumed sweep splits as
// its first runs did.
func (b balanceTimes) keep(r *profiler.Record) {
	cfg, err := config.FromRecord(r)
	if err != nil {
		return
	}
	if k := timesKey(cfg); b[k] == nil && cfg.BalanceTimes != nil {
		b[k] = cfg.BalanceTimes
	}
	if k := speedsKey(cfg); b[k] == nil && cfg.Speeds != nil && cfg.DeviceThreads != nil {
		b[k] = cfg.Speeds
	}
}

// seed keeps the block times of the records already in the dataset at
// path (a resumed sweep's); a dataset that cannot be read seeds none.
func (b balanceTimes) seed(path string) {
	recs, _, err := profiler.ReadFile(path, profiler.ReadOptions{SkipBad: true})
	if err != nil {
		return
	}
	for i := range recs {
		b.keep(&recs[i])
	}
}

// plannedConfigs returns the configurations of runs.
func plannedConfigs(runs []plannedRun) []config.Config {
	out := make([]config.Config, len(runs))
	for i, r := range runs {
		out[i] = r.cfg
	}
	return out
}
