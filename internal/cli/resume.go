package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/profiler"
)

// runKey identifies a run by its whole configuration as a record holds
// it, with the backend and the transport: two runs with equal keys ran
// the same thing.
func runKey(rc profiler.RunConfig, backend, transport string) string {
	rc.BalanceNanos = nil    // the sweep's times, not what the run is
	b, _ := json.Marshal(rc) // a struct of plain fields: cannot fail
	return fmt.Sprintf("%s|%s|%s", b, backend, transport)
}

// givenSplit tells apart in a run's key the runs of one configuration
// given different splits (profile --partition), which their records hold
// in their partition alone: the split where balance is given, else "".
func givenSplit(balance string, bounds []int) string {
	if config.Balance(balance) != config.BalanceGiven {
		return ""
	}
	return fmt.Sprintf("|split %v", bounds)
}

// resumed is a record a resumed sweep already holds, with the index in
// the sweep's list of the configuration it ran.
type resumed struct {
	rec   profiler.Record
	index int
}

// remainingRounds returns, for each configuration of cfgs, the first
// round of rounds that the dataset at path does not hold a measured
// record of (rounds + 1 when it holds them all: a configuration's records
// count as its first rounds, whatever rounds they say), and the records
// it holds that the sweep asks for (each configuration's first rounds
// of them, in the order of the file). A dataset that does not exist
// holds none; bad lines (a torn last line after a crash) are skipped.
func remainingRounds(path string, cfgs []config.Config, steps, warmup, rounds int) ([]int, []resumed, error) {
	first := make([]int, len(cfgs))
	for i := range first {
		first[i] = 1
	}
	recs, _, err := profiler.ReadFile(path, profiler.ReadOptions{SkipBad: true})
	if errors.Is(err, fs.ErrNotExist) {
		return first, nil, nil
	}
	if err != nil {
		return nil, nil, &InputError{Err: fmt.Errorf("--resume: %w", err)}
	}
	held := map[string][]int{}
	for i := range recs {
		if r := &recs[i]; r.Kind == profiler.KindMeasured {
			k := runKey(r.Config, r.Env.Backend, profiler.TransportOf(&r.Env)) + givenSplit(r.Config.Balance, r.Bounds())
			held[k] = append(held[k], i)
		}
	}
	var done []resumed
	for i, c := range cfgs {
		m, err := c.Describe()
		if err != nil {
			return nil, nil, err
		}
		rc := c.RecordConfig(m.Config, steps, warmup)
		kept := held[runKey(rc, c.Backend, c.Transport)+givenSplit(rc.Balance, c.Bounds)]
		kept = kept[:min(len(kept), rounds)]
		first[i] = len(kept) + 1
		for _, j := range kept {
			done = append(done, resumed{rec: recs[j], index: i})
		}
	}
	return first, done, nil
}
