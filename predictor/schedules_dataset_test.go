package predictor

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pipecast/pipecast/schedule"
)

// schedulesData holds the schedules added after the validation dataset,
// interleaved 1F1B (v = 2) and the zero-bubble ZB-H1 and ZB-H2, beside
// 1f1b, measured as the validation dataset is (TestGenerateScheduleDataset)
// so that their forecasts are held to the same bars.
const schedulesData = "testdata/schedules_validation_runs.jsonl"

// schedulesGenerateEnv makes TestGenerateScheduleDataset measure
// schedulesData again.
const schedulesGenerateEnv = "PIPECAST_GENERATE_SCHEDULES"

// newSchedules are the schedules of schedulesData: 1f1b, the one they
// refine, and the three new ones.
var newSchedules = []string{schedule.OneF1B, schedule.Interleaved, schedule.ZBH1, schedule.ZBH2}

// TestGenerateScheduleDataset measures schedulesData: the validation
// dataset's sizes (resnet50 and vgg16bn, 32×32, width 0.25, batch 16, one
// thread per device), K ∈ {1, 2}, M ∈ {1, 2, 4, 8, 16}, each run
// validationRepeats times in shuffled rounds. It runs only when
// schedulesGenerateEnv is set (about ten minutes on two cores).
func TestGenerateScheduleDataset(t *testing.T) {
	if os.Getenv(schedulesGenerateEnv) == "" {
		t.Skipf("set %s=1 to measure the schedules dataset again (about ten minutes)", schedulesGenerateEnv)
	}
	names := []string{"resnet50", "vgg16bn"}
	if s := os.Getenv(schedulesGenerateEnv + "_MODELS"); s != "" {
		names = filepath.SplitList(s)
	}
	out := schedulesData + ".new"
	if err := os.Remove(out); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	start := time.Now()
	cfgs := scheduleConfigs(names, []int{1, 2}, []int{1, 2, 4, 8, 16}, newSchedules)
	measureRounds(t, cfgs, validationOptions, validationRepeats, 0x7a62, out)
	t.Logf("%d configurations × %d runs in %.0f s; rename %s to %s to commit them",
		len(cfgs), validationRepeats, time.Since(start).Seconds(), out, schedulesData)
}

// TestAccuracySchedulesFromSingleDevice holds the new schedules'
// K = 1 → K = 2 forecasts to the validation dataset's bars.
func TestAccuracySchedulesFromSingleDevice(t *testing.T) {
	checkDevicesFromSingleDevice(t, readDataset(t, schedulesData), "schedules ")
}
