package predictor

import (
	"os"
	"testing"
	"time"

	"github.com/pipecast/pipecast/config"
)

// largeData is the second validation dataset, whose working sets exceed
// the last-level cache (about 2.3 times it at M = 1), so that devices
// sharing the machine contend for it: vgg16bn at width 0.25 and 64×64, batch 16 (a training
// forward keeps 2.4 MiB of activations per sample, 38 MiB at M = 1, and
// its weights take 37 MiB, against the 32 MiB L3 of the 2-core AMD EPYC
// it was measured on, shared by both cores), K ∈ {1, 2} × M ∈ {1, 2, 4,
// 8} × the validation dataset's schedules, each run largeRepeats times in
// rounds of a fresh random order, every record with its interference
// measurement (TestGenerateLargeDataset).
const largeData = "testdata/large_validation_runs.jsonl"

// largeGenerateEnv makes TestGenerateLargeDataset measure largeData
// again (about 2.5 minutes on two cores, on a machine quiet but for it).
const largeGenerateEnv = "PIPECAST_GENERATE_LARGE_VALIDATION"

// largeRepeats is how many runs measure each configuration.
const largeRepeats = 3

// largeOptions are the large dataset's run options: validationOptions,
// with the interference measurement.
var largeOptions = validationOptions

func largeConfigs() []config.Config {
	cfgs := validationConfigs([]string{"vgg16bn"}, []int{1, 2}, []int{1, 2, 4, 8})
	for i := range cfgs {
		cfgs[i].ModelConfig.Image = 64
	}
	return cfgs
}

func TestGenerateLargeDataset(t *testing.T) {
	if os.Getenv(largeGenerateEnv) == "" {
		t.Skipf("set %s=1 to measure the large validation dataset again (about 2.5 minutes)", largeGenerateEnv)
	}
	out := largeData + ".new"
	if err := os.Remove(out); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	start := time.Now()
	measureRounds(t, largeConfigs(), largeOptions, largeRepeats, 0x6c6172, out)
	t.Logf("%d configurations × %d runs in %.0f s; rename %s to %s to commit them", len(largeConfigs()), largeRepeats, time.Since(start).Seconds(), out, largeData)
}

// TestAccuracyLargeDevicesFromSingleDevice holds the large dataset's
// K = 1 → K = 2 forecasts to the validation dataset's bars, with the
// interference its single-device records measured.
func TestAccuracyLargeDevicesFromSingleDevice(t *testing.T) {
	recs := readDataset(t, largeData)
	for i := range recs {
		if recs[i].Env.Interference == nil {
			t.Fatalf("%s: record %s has no interference measurement", largeData, recs[i].ID)
		}
	}
	checkDevicesFromSingleDevice(t, recs, "large ")
}

// TestAccuracyLargeMicrobatchHoldout holds out micro-batch sizes on the
// large dataset, as TestAccuracyMicrobatchHoldout does on the first.
func TestAccuracyLargeMicrobatchHoldout(t *testing.T) {
	checkMicrobatchHoldout(t, readDataset(t, largeData), "large ")
}
