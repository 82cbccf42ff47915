package cli

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/pipecast/pipecast/config"
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

// partitions are the partitions a sweep decided, by workload: the first
// run of a workload balances its blocks, and every later run of it, of
// any round or schedule, takes the same bounds, so that rounds repeat one
// configuration and schedules compare on one split. (A partition by
// measured time would otherwise differ from run to run with the
// machine's noise.)
type partitions map[string][]int

// workloadKey identifies the runs that share a partition: the model at
// its size, cut into as many stages, balanced by the same cost at the
// same micro-batch size on the same backend, threads and transport.
func workloadKey(c config.Config) string {
	return fmt.Sprintf("%s %+v b=%d m=%d stages=%d %s %s t=%d %s", c.Model, c.ModelConfig, c.Batch,
		c.MicroBatchSize(), c.Stages(), c.Balance, c.Backend, c.Threads, c.Transport)
}

// apply returns c with the partition its workload decided, if one was
// and c names none of its own.
func (p partitions) apply(c config.Config) config.Config {
	if b, ok := p[workloadKey(c)]; ok && c.Bounds == nil {
		c.Bounds = slices.Clone(b)
	}
	return c
}

// keep records bounds as the partition of c's workload, unless one was
// decided already.
func (p partitions) keep(c config.Config, bounds []int) {
	if k := workloadKey(c); p[k] == nil && len(bounds) > 0 {
		p[k] = slices.Clone(bounds)
	}
}
