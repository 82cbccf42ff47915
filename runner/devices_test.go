package runner

import (
	"slices"
	"testing"
	"time"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/runner/comm"
	"github.com/pipecast/pipecast/schedule"
)

// TestDevicesThatDiffer runs a pipeline whose devices have different
// threads, by speed, replicated: every job device runs its pipeline
// device's threads, the speeds are measured (the reference device, of
// the most threads, at exactly 1) and kept with the block times that
// chose the partition, and the weights are single-device training's on
// the step's samples, to float32 round-off: threads change how fast, not
// what, a device computes.
func TestDevicesThatDiffer(t *testing.T) {
	ctx := watch(t, 2*time.Minute)
	base := config.Config{Model: "mlp", ModelConfig: models.Config{Sizes: []int{48, 64, 64, 64, 5}}, Batch: 8, Seed: 7, Optimizer: "sgd"}
	c := base
	c.Schedule = schedule.Options{Name: schedule.OneF1B, Devices: 2, Micro: 2, Replicas: 2}
	c.DeviceThreads, c.Balance = []int{2, 1}, config.BalanceSpeed
	tr := testTrainer(t, c)
	var threads []int
	for _, d := range tr.devs {
		threads = append(threads, d.Threads())
	}
	if want := []int{2, 1, 2, 1}; !slices.Equal(threads, want) {
		t.Errorf("job devices' threads %v, want %v", threads, want)
	}
	cfg := tr.cfg
	if len(cfg.Speeds) != 2 || cfg.Speeds[0] != 1 || !(cfg.Speeds[1] > 0) || cfg.Threads != 2 {
		t.Errorf("speeds %v at threads %d, want two, the first exactly 1, the reference's", cfg.Speeds, cfg.Threads)
	}
	if len(cfg.BalanceTimes) != 4 {
		t.Errorf("balance times %v, want the 4 blocks' that chose the partition", cfg.BalanceTimes)
	}
	rc := cfg.RecordConfig(cfg.ModelConfig, 1, 0)
	if !slices.Equal(rc.DeviceThreads, []int{2, 1}) || !slices.Equal(rc.DeviceSpeeds, cfg.Speeds) {
		t.Errorf("record: device threads %v, speeds %v; want [2 1], %v", rc.DeviceThreads, rc.DeviceSpeeds, cfg.Speeds)
	}
	whole := base
	whole.Batch, whole.Threads = 2*base.Batch, 1
	ref := newSingleReference(t, ctx, whole, []int{2, 4})
	var losses []float64
	for i := range equivalenceSteps {
		s, err := tr.Step(ctx)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		losses = append(losses, s.Loss)
	}
	ref.checkWeights(t, describe(c), tr.Params())
	ref.checkLosses(t, describe(c), losses)
}

// TestDeviceSpeedsGiven checks that speeds a configuration holds (a
// sweep's, measured once for its rounds) are used, not measured anew,
// and that a partition by speed gives the slower device less work than
// a partition by time of the same block times.
func TestDeviceSpeedsGiven(t *testing.T) {
	c := config.Config{Model: "mlp", ModelConfig: models.Config{Sizes: []int{32, 32, 32, 32, 32, 32, 5}}, Batch: 4, Seed: 1,
		Schedule:      schedule.Options{Name: schedule.GPipe, Devices: 2, Micro: 1},
		DeviceThreads: []int{1, 2}, Speeds: []float64{0.25, 1}, BalanceTimes: []float64{1, 1, 1, 1, 1, 1}}
	c.Balance = config.BalanceSpeed
	bySpeed := testTrainer(t, c)
	c.Balance = config.BalanceTime
	byTime := testTrainer(t, c)
	if !slices.Equal(bySpeed.cfg.Speeds, []float64{0.25, 1}) {
		t.Errorf("speeds %v, want the given [0.25 1]", bySpeed.cfg.Speeds)
	}
	if s, tm := bySpeed.Partition(), byTime.Partition(); s[1] >= tm[1] {
		t.Errorf("device 0 at a quarter speed holds blocks [0, %d) by speed, [0, %d) by time; want fewer by speed", s[1], tm[1])
	}
}

// TestRankSpeeds runs devices of different threads as one process per
// device (goroutines over the in-process transport's groups, standing in
// for ranks on hosts of their own): each rank measures its own speed,
// rank 0 gathers them (its own, the reference's, exactly 1), and every
// rank trains on rank 0's partition by speed.
func TestRankSpeeds(t *testing.T) {
	ctx := watch(t, 2*time.Minute)
	cfg := config.Config{Model: "mlp", ModelConfig: models.Config{Width: 0.25}, Batch: 8, Seed: 3,
		Schedule: schedule.Options{Name: schedule.OneF1B, Devices: 2, Micro: 2}, DeviceThreads: []int{2, 1}, Balance: config.BalanceSpeed}
	res, err := runGroups(ctx, cfg, RunOptions{Steps: 1}, comm.NewInProcessGroups(2))
	if err != nil {
		t.Fatal(err)
	}
	rec := res[0].Record()
	s := rec.Config.DeviceSpeeds
	if len(s) != 2 || s[0] != 1 || !(s[1] > 0) || len(rec.Config.BalanceNanos) == 0 {
		t.Errorf("rank 0's record: speeds %v, balance times %v; want two speeds from 1 and the reference's block times", s, rec.Config.BalanceNanos)
	}
	if d := rec.Env.Devices; len(d) != 2 || d[0].Threads != 2 || d[1].Threads != 1 {
		t.Errorf("record's devices %+v, want of 2 and 1 threads", d)
	}
}
