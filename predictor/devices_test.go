package predictor

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/schedule"
)

// TestDeviceSpeedsFromFits checks that devices' speeds come from the cost
// models of their thread counts: the reference's fitted block times over
// each device's, and ErrNoSpeeds where no runs measured a thread count.
func TestDeviceSpeedsFromFits(t *testing.T) {
	one, two := uniformModel(100), uniformModel(60)
	two.Key.Threads = 2
	fits := map[Key]*CostModel{one.Key: one, two.Key: two}
	cfg := uniformConfig(schedule.GPipe, 2, 4)
	cfg.DeviceThreads = []int{2, 1}
	speeds, err := DeviceSpeeds(fits, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(speeds) != 2 || speeds[0] != 1 || math.Abs(speeds[1]-0.6) > 1e-12 {
		t.Errorf("speeds %v, want [1 0.6]", speeds)
	}
	cfg.DeviceThreads = []int{2, 3}
	if _, err := DeviceSpeeds(fits, cfg); !errors.Is(err, ErrNoSpeeds) {
		t.Errorf("threads 2,3 without runs at 3: %v, want ErrNoSpeeds", err)
	}
	cfg.DeviceThreads = []int{2, 1}
	if _, err := Predict(context.Background(), two, cfg); !errors.Is(err, ErrNoSpeeds) {
		t.Errorf("a forecast of threads 2,1 without speeds: %v, want ErrNoSpeeds", err)
	}
}

// TestPredictDeviceSpeeds checks forecasts on devices that differ: a
// device at half speed prices its compute as a straggler of factor 2
// does, and the balance by speed gives it a third of the blocks, which
// evens the stages and shortens the step.
func TestPredictDeviceSpeeds(t *testing.T) {
	ctx := context.Background()
	c := uniformModel(100)
	half := uniformConfig(schedule.GPipe, 2, 4)
	half.Speeds = []float64{1, 0.5}
	straggler := uniformConfig(schedule.GPipe, 2, 4)
	straggler.Straggler = config.Straggler{Device: 1, Factor: 2}
	a, err := Predict(ctx, c, half)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Predict(ctx, c, straggler)
	if err != nil {
		t.Fatal(err)
	}
	if a.Summary.StepNanosMedian != b.Summary.StepNanosMedian {
		t.Errorf("device 1 at half speed: step %d ns; as a straggler ×2: %d ns; want the same", a.Summary.StepNanosMedian, b.Summary.StepNanosMedian)
	}
	bySpeed := half
	bySpeed.Bounds, bySpeed.Balance = nil, config.BalanceSpeed
	s, err := Predict(ctx, c, bySpeed)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Bounds(); len(got) != 3 || got[1] != 12 {
		t.Errorf("by speed: bounds %v, want device 1 at half speed to hold the last 6 of 18 equal blocks", got)
	}
	if !(s.Summary.StepNanosMedian < a.Summary.StepNanosMedian) {
		t.Errorf("by speed: step %d ns, not shorter than the even split's %d ns", s.Summary.StepNanosMedian, a.Summary.StepNanosMedian)
	}
	if len(s.Config.DeviceSpeeds) != 2 || s.Config.Balance != string(config.BalanceSpeed) {
		t.Errorf("forecast record: speeds %v, balance %q; want the configuration's", s.Config.DeviceSpeeds, s.Config.Balance)
	}
}
