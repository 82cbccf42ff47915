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
	b, _ := json.Marshal(rc) // a struct of plain fields: cannot fail
	return fmt.Sprintf("%s|%s|%s", b, backend, transport)
}

// remainingRuns returns the configurations of cfgs whose measured record
// the dataset at path does not hold yet, and how many it does hold. A
// dataset that does not exist holds none; bad lines (a torn last line
// after a crash) are skipped.
func remainingRuns(path string, cfgs []config.Config, steps, warmup int) ([]config.Config, int, error) {
	recs, _, err := profiler.ReadFile(path, profiler.ReadOptions{SkipBad: true})
	if errors.Is(err, fs.ErrNotExist) {
		return cfgs, 0, nil
	}
	if err != nil {
		return nil, 0, &InputError{Err: fmt.Errorf("--resume: %w", err)}
	}
	held := map[string]bool{}
	for i := range recs {
		if r := &recs[i]; r.Kind == profiler.KindMeasured {
			held[runKey(r.Config, r.Env.Backend, profiler.TransportOf(&r.Env))] = true
		}
	}
	var left []config.Config
	done := 0
	for _, c := range cfgs {
		m, err := c.Describe()
		if err != nil {
			return nil, 0, err
		}
		if held[runKey(c.RecordConfig(m.Config, steps, warmup), c.Backend, c.Transport)] {
			done++
			continue
		}
		left = append(left, c)
	}
	return left, done, nil
}
