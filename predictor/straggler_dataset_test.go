package predictor

import (
	"context"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/runner"
	"github.com/pipecast/pipecast/schedule"
)

// stragglerData holds K = 2 runs of gpipe and coop with and without a
// straggler (device 1 computing 1.5 times as slowly), measured by
// TestGenerateStragglerDataset: stragglerRounds rounds, each running
// every configuration's pair (without, then with the straggler, or the
// other way round in odd rounds) back to back, the pairs in a fresh
// random order.
const stragglerData = "testdata/straggler_runs.jsonl"

// stragglerGenerateEnv makes TestGenerateStragglerDataset measure
// stragglerData again (a few minutes on two cores).
const stragglerGenerateEnv = "PIPECAST_GENERATE_STRAGGLER"

// stragglerOptions are the steps of each straggler run: more than the
// validation runs', since a slowdown is a ratio of two runs' medians; the
// straggler measures its unslowed ops in the warm-up steps.
var stragglerOptions = runner.RunOptions{Warmup: 4, Steps: 12, BlockTiming: true, Calibrate: true}

// stragglerRounds is how many pairs of runs measure each configuration.
// On the 2-core machine the dataset was measured on, whole runs of the
// resnet50 configurations (20–60 ms steps) differ by up to a tenth from
// one another, and by less from the run next to them: a slowdown is
// measured per pair, and its median over the rounds is the measured one.
const stragglerRounds = 5

// stragglerFactor is the slowdown the dataset injects into device 1.
const stragglerFactor = 1.5

// stragglerPairs are the dataset's configurations: the validation
// configurations of gpipe and coop at K = 2, each without and with the
// straggler.
func stragglerPairs() [][2]config.Config {
	var out [][2]config.Config
	for _, c := range validationConfigs([]string{"resnet50", "vgg16bn"}, []int{2}, []int{1, 2, 4, 8}) {
		if c.Schedule.Name != schedule.GPipe && c.Schedule.Name != schedule.Coop {
			continue
		}
		slow := c
		slow.Straggler = config.Straggler{Device: 1, Factor: stragglerFactor}
		out = append(out, [2]config.Config{c, slow})
	}
	return out
}

func TestGenerateStragglerDataset(t *testing.T) {
	if os.Getenv(stragglerGenerateEnv) == "" {
		t.Skipf("set %s=1 to measure the straggler dataset again (minutes)", stragglerGenerateEnv)
	}
	out := stragglerData + ".new"
	if err := os.Remove(out); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	pairs := stragglerPairs()
	start := time.Now()
	for round := range stragglerRounds {
		var cfgs []config.Config
		for _, j := range rand.New(rand.NewPCG(uint64(round), 0x737467)).Perm(len(pairs)) {
			p := pairs[j]
			if round%2 == 1 {
				p[0], p[1] = p[1], p[0]
			}
			cfgs = append(cfgs, p[0], p[1])
		}
		measureRuns(t, cfgs, stragglerOptions, func(rec profiler.Record) {
			rec.Round = round + 1
			if err := profiler.Append(out, rec); err != nil {
				t.Fatal(err)
			}
		})
	}
	t.Logf("%d pairs × %d rounds in %.0f s; rename %s to %s to commit them", len(pairs), stragglerRounds, time.Since(start).Seconds(), out, stragglerData)
}

// TestAccuracyStraggler fits the dataset's runs without a straggler and
// checks that the forecast slowdown of each configuration with the
// straggler (its forecast step over the forecast without) is within 5 %
// of the measured one, the median over the rounds of a straggler run's
// median step over that of the run without it next to it, or between the
// smallest and largest of those pairs' slowdowns.
func TestAccuracyStraggler(t *testing.T) {
	recs := readDataset(t, stragglerData)
	fits, err := Fit(recs)
	if err != nil {
		t.Fatal(err)
	}
	// runs[key] holds the median steps of the configuration's runs in
	// the order they ran, without and with the straggler.
	type runs struct{ base, slow []float64 }
	measured := map[string]*runs{}
	cfgOf := map[string]config.Config{}
	keyOf := map[string]Key{}
	var keys []string
	for i := range recs {
		r := &recs[i]
		cfg, err := config.FromRecord(r)
		if err != nil {
			t.Fatal(err)
		}
		slow := cfg.Straggler.Active()
		cfg.Straggler = config.Straggler{}
		key := cfg.String()
		if measured[key] == nil {
			measured[key] = &runs{}
			cfgOf[key], keyOf[key] = cfg, KeyOf(r)
			keys = append(keys, key)
		}
		if slow {
			measured[key].slow = append(measured[key].slow, float64(r.Summary.StepNanosMedian))
		} else {
			measured[key].base = append(measured[key].base, float64(r.Summary.StepNanosMedian))
		}
	}
	worst, within := 0.0, 0
	for _, key := range keys {
		m := measured[key]
		if len(m.base) != len(m.slow) || len(m.base) == 0 {
			t.Fatalf("%s: %d runs without the straggler and %d with it, want pairs", key, len(m.base), len(m.slow))
		}
		ratios := make([]float64, len(m.base))
		for i := range ratios {
			ratios[i] = m.slow[i] / m.base[i]
		}
		want := profiler.Median(ratios)
		cfg := cfgOf[key]
		base, err := Predict(context.Background(), fits[keyOf[key]], cfg)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Straggler = config.Straggler{Device: 1, Factor: stragglerFactor}
		slow, err := Predict(context.Background(), fits[keyOf[key]], cfg)
		if err != nil {
			t.Fatal(err)
		}
		got := float64(slow.Summary.StepNanosMedian) / float64(base.Summary.StepNanosMedian)
		rel := got/want - 1
		worst = max(worst, abs(rel))
		if abs(rel) <= 0.05 {
			within++
		}
		// A forecast between the smallest and largest slowdown of the
		// pairs is as good as measuring a pair again; one outside them
		// must lie within 5 % of their median.
		if inside := got >= slices.Min(ratios) && got <= slices.Max(ratios); abs(rel) > 0.05 && !inside {
			t.Errorf("%s: forecast slowdown %.3f, %+.1f %% from the measured %.3f and outside its pairs' %.3f–%.3f", key, got, 100*rel, want, slices.Min(ratios), slices.Max(ratios))
		}
		t.Logf("%-52s measured slowdown %.3f (pairs %.3f–%.3f), forecast %.3f (%+.1f %%)", key, want, slices.Min(ratios), slices.Max(ratios), got, 100*rel)
	}
	t.Logf("%d of %d configurations within 5 %% of the median pair, worst %.1f %%", within, len(keys), 100*worst)
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
