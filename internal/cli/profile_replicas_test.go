package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/schedule"
)

// TestProfileReplicas profiles a sweep over replica counts and checks
// what a user sees: a record per configuration that names its replicas
// and holds every job device with its dp-allreduce, the runs table's R
// column, the samples of a step counted over the replicas, a clear
// refusal of a count below one, and forecasts of replicas.
func TestProfileReplicas(t *testing.T) {
	dir := t.TempDir()
	code, out, errOut := run(t, "profile", "--model", "mlp", "--width", "0.25", "--batch", "8", "--devices", "1,2", "--replicas", "1,2",
		"--microbatches", "2", "--schedule", "1f1b", "--balance", "macs", "--steps", "1", "--warmup", "0", "--rounds", "1", "--threads", "1",
		"--output", "csv", "--out", dir)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	recs, _, err := profiler.ReadFile(filepath.Join(dir, "runs.jsonl"), profiler.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 4 {
		t.Fatalf("%d records, want R 1, 2 × K 1, 2", len(recs))
	}
	for _, r := range recs {
		c := r.Config
		n := max(c.Replicas, 1) * c.Devices
		if len(r.Devices) != n || len(r.Env.Devices) != n {
			t.Errorf("R=%d K=%d: %d devices, %d in the environment; want %d", c.Replicas, c.Devices, len(r.Devices), len(r.Env.Devices), n)
		}
		_, sums := r.Devices[0].BusyNanosByOp[schedule.DPAllReduce.String()]
		if sums != (c.Replicas > 1) {
			t.Errorf("R=%d K=%d: device 0's ops %v", c.Replicas, c.Devices, r.Devices[0].BusyNanosByOp)
		}
		if c.Replicas > 1 && r.Summary.MovedBytesPerStep == 0 {
			t.Errorf("R=%d K=%d: no bytes moved", c.Replicas, c.Devices)
		}
		if c.Replicas == 1 {
			t.Errorf("a record of one replica says replicas 1; want it left out")
		}
		want := float64(max(c.Replicas, 1)*c.Batch) / (float64(r.Summary.StepNanosMedian) / 1e9)
		if got := r.Summary.SamplesPerSecond; got < 0.999*want || got > 1.001*want {
			t.Errorf("R=%d K=%d: %.1f samples/s, want R·B over the step, %.1f", c.Replicas, c.Devices, got, want)
		}
	}
	header := strings.SplitN(out, "\n", 2)[0]
	if !strings.Contains(header, "replicas") {
		t.Errorf("runs table header %q has no replicas column", header)
	}
	code, _, errOut = run(t, "profile", "--model", "mlp", "--replicas", "0", "--dry-run")
	if code != ExitUsage || !strings.Contains(errOut, "--replicas 0: need at least 1") {
		t.Errorf("--replicas 0: exit %d, %q; want %d and a message", code, errOut, ExitUsage)
	}
	// Forecasts of replicas come from the runs of one replica and their
	// calibrations; the runs of replicas are not fitted.
	code, out, errOut = run(t, "predict", "--data", filepath.Join(dir, "runs.jsonl"), "--replicas", "2,3", "--devices", "1,2", "--output", "csv")
	if code != ExitOK {
		t.Fatalf("predict --replicas 2,3: exit %d: %s", code, errOut)
	}
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 5 || !strings.Contains(lines[0], "replicas") {
		t.Errorf("predict --replicas 2,3 --devices 1,2: want a header with replicas and 4 rows:\n%s", out)
	}
	code, out, _ = run(t, "predict", "--data", filepath.Join(dir, "runs.jsonl"), "--replicas", "2", "--devices", "1")
	if code != ExitOK || !strings.Contains(out, "from 2 measured runs") {
		t.Errorf("predict: exit %d, %q; want the 2 runs of one replica counted as fitted", code, out)
	}
}
