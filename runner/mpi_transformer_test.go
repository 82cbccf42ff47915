//go:build mpi

package runner

import (
	"context"
	"encoding/json"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/runner/comm"
	"github.com/pipecast/pipecast/runner/comm/mpi"
	"github.com/pipecast/pipecast/schedule"
)

// TestMPITransformers checks that both transformer families train under
// every schedule as two MPI processes to the weights single-device
// training gives, with SGD and AdamW, by TestEquivalenceTransformers'
// rule: GPT-2's embedding and LM head fall on different ranks, so the
// all-reduce of their gradients crosses processes over MPI's sends and
// receives. Each rank checks the tensors it trained; rank 0 the losses,
// the record, and that the ranks' tensors together are the model's.
func TestMPITransformers(t *testing.T) {
	if !underMPI() {
		out, err, took := mpiRun(t, 2, t.Name())
		if err != nil {
			t.Fatalf("2 ranks: %v\n%s", err, out)
		}
		t.Logf("2 ranks in %v:\n%s", took.Round(time.Millisecond), out)
		return
	}
	w, err := mpi.Init()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Finalize()
	ctx := context.Background()
	tw := multiprocessTransformers
	for _, model := range tw.models {
		for _, opt := range tw.optimizers {
			base := config.Config{Model: model, ModelConfig: tw.mc, Batch: tw.batch, Seed: 7, Optimizer: opt, Threads: 1}
			ref := newSingleReference(t, ctx, base, tw.floor)
			worst := 0.0
			for _, o := range pipelines(2, tw.micro) {
				cfg := base
				cfg.Schedule = o
				worst = math.Max(worst, mpiTransformerRun(t, ctx, w, cfg, ref))
			}
			t.Logf("rank %d: %s/%s: %d schedules at K 2, M %d: worst difference %.2f of what is allowed",
				w.Rank(), model, opt, len(pipelines(2, tw.micro)), tw.micro, worst)
		}
	}
}

// mpiTransformerRun runs cfg over the world's first K ranks and checks
// it against ref; it returns this rank's worst difference as a fraction
// of what is allowed.
func mpiTransformerRun(t *testing.T, ctx context.Context, w comm.World, cfg config.Config, ref singleReference) float64 {
	t.Helper()
	name := describe(cfg)
	g, err := w.Split(ctx, cfg.Schedule.Devices)
	if err != nil {
		t.Fatalf("%s: split: %v", name, err)
	}
	worst := 0.0
	if g != nil {
		// The watchdog names where a rank waits if the all-reduce's
		// transfers do not match, instead of mpirun's 10-minute limit.
		opts := RunOptions{Warmup: 1, Steps: equivalenceSteps - 1, Weights: true, Group: g, Timeout: time.Minute}
		res, err := Run(ctx, cfg, opts)
		if err != nil {
			t.Fatalf("rank %d: %s: %v", w.Rank(), name, err)
		}
		worst = ref.checkWeights(t, name, res.Weights)
		var mine []string
		for n := range res.Weights {
			mine = append(mine, n)
		}
		b, err := json.Marshal(mine)
		if err != nil {
			t.Fatal(err)
		}
		all, err := g.Gather(ctx, 0, b)
		if err != nil {
			t.Fatalf("rank %d: %s: gather the tensors' names: %v", w.Rank(), name, err)
		}
		g.Close()
		if w.Rank() == 0 {
			var names []string
			for r, b := range all {
				var theirs []string
				if err := json.Unmarshal(b, &theirs); err != nil {
					t.Fatalf("%s: rank %d's names: %v", name, r, err)
				}
				names = append(names, theirs...)
			}
			slices.Sort(names)
			ref.checkNames(t, name, names)
			ref.checkLosses(t, name, stepLosses(res))
			checkMPITransformerRecord(t, name, res)
		}
	}
	if err := w.Barrier(ctx); err != nil {
		t.Fatal(err)
	}
	return worst
}

// checkMPITransformerRecord checks rank 0's record of an MPI run: valid,
// of the MPI transport and every rank, and with, for every device, as
// many all-reduce events that received bytes (the other rank's copy of a
// tied gradient) as its program runs all-reduces over two ranks or more
// in each measured step, and some where the model ties parameters of
// stages on different ranks.
func checkMPITransformerRecord(t *testing.T, name string, res *Result) {
	t.Helper()
	rec := res.Record()
	if err := rec.Validate(); err != nil {
		t.Errorf("%s: record: %v", name, err)
	}
	k := res.Config.Schedule.Devices
	if rec.Env.Transport != profiler.TransportMPI || len(rec.Env.Ranks) != k || len(rec.Devices) != k {
		t.Errorf("%s: transport %q, %d ranks, %d devices; want mpi and %d", name, rec.Env.Transport, len(rec.Env.Ranks), len(rec.Devices), k)
	}
	prog, err := res.Config.Program(res.Model, res.Partition)
	if err != nil {
		t.Fatalf("%s: program: %v", name, err)
	}
	total := 0
	for d, ops := range prog.Devices {
		want := 0
		for _, op := range ops {
			// An all-reduce of one device's copies (the V-shaped
			// schedules put GPT-2's first and last stages on device 0)
			// sums them in place and receives nothing.
			if op.Kind == schedule.AllReduce && len(prog.GroupOf(op)) > 1 {
				want += len(res.Steps)
			}
		}
		total += want
		got := 0
		for _, e := range rec.Events {
			if e.Device == d && e.Op == schedule.AllReduce.String() && e.Bytes > 0 {
				got++
			}
		}
		if got != want {
			t.Errorf("%s: device %d: %d all-reduce events that received bytes in %d steps, want %d", name, d, got, len(res.Steps), want)
		}
	}
	across := false
	for _, tie := range res.Model.Ties() {
		stages, err := tie.Stages(res.Partition)
		if err != nil {
			t.Fatalf("%s: tie %v: %v", name, tie.Names, err)
		}
		for _, s := range stages {
			across = across || prog.Owners[s] != prog.Owners[stages[0]]
		}
	}
	if across && total == 0 {
		t.Errorf("%s: %s ties parameters across ranks (partition %v) but its program sums no gradients", name, res.Config.Model, res.Partition)
	}
}
