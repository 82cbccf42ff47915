package runner

import (
	"strings"
	"testing"
	"time"

	"github.com/pipecast/pipecast/schedule"
)

// TestLoadsFollowTheProgram checks that each device uploads what its
// program's loads say: the inputs for the first stage's owner, a shard
// for each of coop's prediction steps, and nothing for the others.
func TestLoadsFollowTheProgram(t *testing.T) {
	for _, o := range []schedule.Options{
		{Name: schedule.GPipe, Devices: 3, Micro: 2},
		{Name: schedule.Coop, Devices: 3, Micro: 2, Prefetch: 1},
	} {
		tr := testTrainer(t, faultConfig(o))
		for _, w := range tr.workers {
			s := newStepState(0, nil)
			batch, err := tr.loader.Batch(0)
			if err != nil {
				t.Fatal(err)
			}
			s.batch = batch
			tr.load(w, s)
			_, wantRaw := tr.program.LoadOf(w.k, schedule.Inputs, schedule.Forward)
			_, wantShard := tr.program.LoadOf(w.k, schedule.Inputs, schedule.Predict)
			_, wantLabels := tr.program.LoadOf(w.k, schedule.Labels, schedule.Loss)
			if (s.raw != nil) != wantRaw || (s.shard != nil) != wantShard || (s.labelsHi > 0) != wantLabels {
				t.Errorf("%s device %d: inputs %v, shard %v, labels %v; want %v, %v, %v", o.Name, w.k,
					s.raw != nil, s.shard != nil, s.labelsHi > 0, wantRaw, wantShard, wantLabels)
			}
			if s.raw != nil && s.raw.Dim(0) != tr.cfg.Batch {
				t.Errorf("%s device %d: %d samples of inputs, want %d", o.Name, w.k, s.raw.Dim(0), tr.cfg.Batch)
			}
			if s.shard != nil && s.shard.Dim(0) != tr.cfg.Batch/o.Devices {
				t.Errorf("%s device %d: a shard of %d samples, want %d", o.Name, w.k, s.shard.Dim(0), tr.cfg.Batch/o.Devices)
			}
			w.step = s
			w.releaseStep()
			w.step = nil
			batch.Release()
		}
	}
}

// TestCollectiveOverASubsetRefused checks that a collective whose group
// is not every device fails with an error that says so, rather than
// running over all of them: the transports cannot yet run one over a
// subset.
func TestCollectiveOverASubsetRefused(t *testing.T) {
	ctx := watch(t, time.Minute)
	tr := testTrainer(t, faultConfig(schedule.Options{Name: schedule.Coop, Devices: 3, Micro: 2, Prefetch: 1}))
	tr.program.Groups = append(tr.program.Groups, []int{0, 1})
	for k := range tr.program.Devices {
		for i, op := range tr.program.Devices[k] {
			if op.Kind == schedule.AllGather {
				tr.program.Devices[k][i].Group = 1
			}
		}
	}
	_, err := tr.Step(ctx)
	if want := "the transport's collectives span all 3 devices, not a subset"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("step error %v, want one containing %q", err, want)
	}
}
