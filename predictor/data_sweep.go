package predictor

import (
	"slices"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/schedule"
)

// DataSweep returns the sweep of what recs hold for key: its sizes,
// threads, backend and optimizer, and every batch, device count,
// micro-batch count, schedule and schedule option among its runs, each
// list sorted; of a language model, whose key spans sequence lengths,
// every sequence length among its runs too. The balance is the data's where its runs agree, otherwise
// time, with the splits the runs were given where they agree on given
// ones (dataPartitions); the data set, seed and the optimizer's
// hyper-parameters are the first run's.
func DataSweep(recs []profiler.Record, key Key) config.Sweep {
	s := config.Sweep{
		Models:    []string{key.Model},
		Threads:   key.Threads,
		Backend:   key.Backend,
		Transport: key.Transport,
		Balance:   config.BalanceTime,
		Optimizer: key.OptimizerName(),
	}
	s.SizeVariants.Add(key.SizeRecord)
	if key.SpansSeq() {
		s.SizeVariants.Seqs = nil // the runs': 0 would be the model's default
	}
	var balances []string
	var variants schedule.Variants
	for i := range recs {
		r := &recs[i]
		if KeyOf(r) != key {
			continue
		}
		c := r.Config
		if s.Dataset == "" {
			s.Dataset, s.Seed = c.Dataset, c.Seed
			if c.LR != 0 { // a record from before optimizers were recorded holds none
				s.LR, s.WeightDecay, s.Betas = c.LR, &c.WeightDecay, c.Betas
				if c.Eps != 0 {
					s.Eps = &c.Eps
				}
			}
		}
		if key.SpansSeq() {
			s.SizeVariants.Seqs = appendNew(s.SizeVariants.Seqs, c.Seq)
		}
		s.Batches = appendNew(s.Batches, c.Batch)
		s.Devices = appendNew(s.Devices, c.Devices)
		s.Replicas = appendNew(s.Replicas, max(c.Replicas, 1))
		s.Micro = appendNew(s.Micro, c.Micro)
		s.Schedules = appendNew(s.Schedules, c.Schedule)
		if o, err := c.RecordOptions.Options(); err == nil {
			variants.Add(o)
		}
		balances = appendNew(balances, c.Balance)
	}
	slices.Sort(s.SizeVariants.Seqs)
	slices.Sort(s.Batches)
	slices.Sort(s.Devices)
	slices.Sort(s.Replicas)
	if len(s.Replicas) == 1 && s.Replicas[0] == 1 {
		s.Replicas = nil // one replica, the default
	}
	slices.Sort(s.Micro)
	order := schedule.Names()
	slices.SortFunc(s.Schedules, func(a, b string) int { return slices.Index(order, a) - slices.Index(order, b) })
	variants.Sort()
	s.Variants = variants
	if len(balances) == 1 {
		s.Balance = config.Balance(balances[0])
	}
	s.Partitions = dataPartitions(recs, key, s.Balance)
	return s
}

// appendNew appends v unless s holds it.
func appendNew[T comparable](s []T, v T) []T {
	if slices.Contains(s, v) {
		return s
	}
	return append(s, v)
}
