package runner

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/runner/comm"
	"github.com/pipecast/pipecast/schedule"
	"github.com/pipecast/pipecast/tensor"
)

// Placement: which device holds which stage's weights, and the shapes of
// the tensors that cross between stages.

// place opens the devices and builds every worker's stages and replicas.
// A job of R replicas has R·K devices: job device d runs device d mod K
// of the program in replica d / K.
func (t *Trainer) place() error {
	k := len(t.program.Devices)
	r := t.program.Replicas()
	n := r * k
	stages := t.program.Stages
	// The initial weights: one model built as a single device would build
	// it, from the seed, then copied stage by stage.
	host, err := tensor.Open(t.cfg.Backend, tensor.Options{Index: n, Threads: t.cfg.Threads})
	if err != nil {
		return err
	}
	defer host.Close()
	// A symbolic device (the meta backend's) holds no values, so
	// initialisation draws would be pointless there.
	var rng *rand.Rand
	if !tensor.IsSymbolic(host) {
		rng = rand.New(rand.NewPCG(t.cfg.Seed, 0x77656967687473))
	}
	init, err := models.Build(host, t.cfg.Model, t.cfg.ModelConfig, rng)
	if err != nil {
		return err
	}
	defer init.Release()
	local := make([]int, n) // the devices this process runs
	for d := range local {
		local[d] = d
	}
	var pipes, joins []*comm.InProcess
	if t.group != nil {
		local = []int{t.group.Rank()}
	} else {
		for range r {
			pipes = append(pipes, comm.NewInProcessTransport(k))
		}
		if r > 1 {
			for range k {
				joins = append(joins, comm.NewInProcessTransport(r))
			}
		}
		t.transports = append(pipes, joins...)
	}
	for _, d := range local {
		dev, err := tensor.Open(t.cfg.Backend, tensor.Options{Index: d, Threads: t.cfg.ThreadsOf(d)})
		if err != nil {
			return err
		}
		t.devs = append(t.devs, dev)
		opt, err := models.NewOptimizer(t.cfg.Optimizer, t.cfg.Hyper())
		if err != nil {
			return err
		}
		w := &worker{t: t, k: d % k, d: d, replica: d / k, base: d / k * t.cfg.Batch,
			dev: dev, ops: t.program.Devices[d%k], opt: opt}
		switch {
		case t.group == nil:
			w.ep = pipes[w.replica].Endpoint(w.k)
			if r > 1 {
				w.dp = joins[w.k].Endpoint(w.replica)
			}
		case r == 1:
			w.ep = t.group
		default:
			w.ep = comm.SubEndpoint(t.group, pipelineRanks(w.replica, k))
			if w.dp, err = t.replicaGroup(w.k, w.replica, replicaRanks(w.k, k, r)); err != nil {
				return err
			}
		}
		t.workers = append(t.workers, w)
		w.owned = t.program.StagesOf(w.k)
		w.stages = make([]*models.Sequential, stages)
		if err := t.materializeOwned(w, dev); err != nil {
			return err
		}
		for _, s := range w.owned {
			if err := models.CopyState(w.stages[s], init.Stage(t.bounds[s], t.bounds[s+1])); err != nil {
				return err
			}
		}
		w.dpParams = replicaParams(w)
		w.replicas = make([]*models.Sequential, stages)
		w.replicaFlats = make([]*tensor.Tensor, stages)
		for _, s := range replicated(t.program, w.k) {
			// Replicas are weights too: the all-gather fills them before
			// every prediction step.
			if w.replicas[s], w.replicaFlats[s], err = t.materialize(s, dev, tensor.Weights); err != nil {
				return err
			}
		}
		dev.ResetPeak()
	}
	return nil
}

// replicaGroup returns, in a run of one process per device, the endpoint
// of pipeline device k's replicas (this one being replica replica): a
// group of their own where the transport splits (comm.Splitter: MPI's
// communicator per stage, whose MPI_Allreduce sums their gradients), else
// the subset members of the run's group. Every rank calls it, and splits
// alike.
func (t *Trainer) replicaGroup(k, replica int, members []int) (comm.Endpoint, error) {
	s, ok := t.group.(comm.Splitter)
	if !ok {
		return comm.SubEndpoint(t.group, members), nil
	}
	g, err := s.SplitBy(context.Background(), k, replica)
	if err != nil {
		return nil, fmt.Errorf("the replicas of device %d: %w", k, err)
	}
	t.subgroups = append(t.subgroups, g)
	return g, nil
}

// pipelineRanks returns the job devices of replica r's pipeline of k.
func pipelineRanks(r, k int) []int {
	out := make([]int, k)
	for i := range out {
		out[i] = r*k + i
	}
	return out
}

// replicaRanks returns the job devices that run pipeline device k in
// each of r replicas.
func replicaRanks(k, K, r int) []int {
	out := make([]int, r)
	for i := range out {
		out[i] = i*K + k
	}
	return out
}

// replicated returns the stages whose weights device d receives in the
// program's all-gathers without owning them (coop's prediction step runs
// them on replicas), in the order the first all-gather lists them.
func replicated(p *schedule.Program, d int) []int {
	var out []int
	seen := make([]bool, p.Stages)
	for _, op := range p.Devices[d] {
		if op.Kind != schedule.AllGather {
			continue
		}
		for _, s := range op.Stages {
			if !seen[s] && p.Owners[s] != d {
				seen[s] = true
				out = append(out, s)
			}
		}
	}
	return out
}

// materializeOwned builds the stages w owns from one description of the
// model, so that a parameter two of them share stays one *Param, and
// gives their parameters, each once, zeroed storage on dev as one flat
// tensor.
func (t *Trainer) materializeOwned(w *worker, dev tensor.Device) error {
	m, err := models.Describe(t.cfg.Model, t.cfg.ModelConfig)
	if err != nil {
		return err
	}
	var children []models.Child
	for _, s := range w.owned {
		w.stages[s] = m.Stage(t.bounds[s], t.bounds[s+1])
		children = append(children, models.Child{Layer: w.stages[s]})
	}
	all := models.NewSequential(children...)
	w.flat = models.Materialize(all, dev, tensor.Weights)
	w.params = models.Params(all)
	return nil
}

// materialize builds stage s's layers with zeroed storage on dev.
func (t *Trainer) materialize(s int, dev tensor.Device, cat tensor.Category) (*models.Sequential, *tensor.Tensor, error) {
	m, err := models.Describe(t.cfg.Model, t.cfg.ModelConfig)
	if err != nil {
		return nil, nil, err
	}
	stage := m.Stage(t.bounds[s], t.bounds[s+1])
	return stage, models.Materialize(stage, dev, cat), nil
}

// shapeIn returns the shape of n samples of stage k's input.
func (t *Trainer) shapeIn(k, n int) tensor.Shape {
	return append(tensor.Shape{n}, t.model.Blocks[t.bounds[k]].In...)
}

// shapeOut returns the shape of n samples of stage k's output.
func (t *Trainer) shapeOut(k, n int) tensor.Shape {
	return append(tensor.Shape{n}, t.model.Blocks[t.bounds[k+1]-1].Out...)
}

// last reports whether stage s is the model's last.
func (t *Trainer) last(s int) bool { return s == t.program.Stages-1 }
