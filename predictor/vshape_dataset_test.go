package predictor

import (
	"os"
	"testing"
	"time"

	"github.com/pipecast/pipecast/schedule"
)

// vshapeData holds the V-shaped schedules, ZB-V and DualPipeV, measured
// as the schedules dataset is (TestGenerateVShapeDataset), so that their
// forecasts are held to the same bars: fitted on the K = 1 runs, whose
// two stages share the device, the K = 2 runs forecast.
const vshapeData = "testdata/vshape_validation_runs.jsonl"

// vshapeGenerateEnv makes TestGenerateVShapeDataset measure vshapeData
// again.
const vshapeGenerateEnv = "PIPECAST_GENERATE_VSHAPE"

// vshapeSchedules are the schedules of vshapeData.
var vshapeSchedules = []string{schedule.ZBV, schedule.DualPipeV}

// vshapeRepeats is how many rounds measure each configuration: more than
// the other datasets' validationRepeats, because on the shared machines
// these were recorded on the rounds of one configuration spread by 20–27
// % and three recordings of five rounds forecast K = 2 with MAPE from 3.6
// to 7.1 %: the median of more rounds holds stiller.
const vshapeRepeats = 9

// TestGenerateVShapeDataset measures vshapeData: the validation dataset's
// sizes (resnet50 and vgg16bn, 32×32, width 0.25, batch 16, one thread per
// device, balanced by MACs), K ∈ {1, 2}, M ∈ {1, 2, 4, 8, 16} (resnet50
// from 2 to 8 samples a micro-batch), zb-v and dualpipev, each run
// vshapeRepeats times in shuffled rounds. It runs only when
// vshapeGenerateEnv is set (about six minutes on two cores).
func TestGenerateVShapeDataset(t *testing.T) {
	if os.Getenv(vshapeGenerateEnv) == "" {
		t.Skipf("set %s=1 to measure the V-shaped schedules' dataset again (about six minutes)", vshapeGenerateEnv)
	}
	out := vshapeData + ".new"
	if err := os.Remove(out); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	start := time.Now()
	cfgs := scheduleConfigs([]string{"resnet50", "vgg16bn"}, []int{1, 2}, []int{1, 2, 4, 8, 16}, vshapeSchedules)
	measureRounds(t, cfgs, validationOptions, vshapeRepeats, 0x7662, out)
	t.Logf("%d configurations × %d runs in %.0f s; rename %s to %s to commit them",
		len(cfgs), vshapeRepeats, time.Since(start).Seconds(), out, vshapeData)
}

// TestAccuracyVShapeFromSingleDevice holds the V-shaped schedules'
// K = 1 → K = 2 forecasts to the validation dataset's bars.
func TestAccuracyVShapeFromSingleDevice(t *testing.T) {
	if _, err := os.Stat(vshapeData); err != nil {
		t.Skipf("%s is not recorded yet: scripts/record-datasets.sh vshape", vshapeData)
	}
	checkDevicesFromSingleDevice(t, readDataset(t, vshapeData), "vshape ")
}
