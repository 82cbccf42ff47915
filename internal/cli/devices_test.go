package cli

import (
	"encoding/csv"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pipecast/pipecast/profiler"
)

// TestDevicesThatDifferFlags checks the refusals of per-device threads
// and a straggler that cannot apply: one line, exit 2, before any work.
func TestDevicesThatDifferFlags(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"profile: a device of no threads", []string{"profile", "--threads", "2,0"}, "--threads 2,0: need at least 1 thread a device"},
		{"predict: not a count", []string{"predict", "--data", "x.jsonl", "--threads", "2,x"}, "--threads 2,x: want a thread count"},
		{"plan: threads of another K", []string{"plan", "--model", "mlp", "--devices", "3", "--threads", "2,1", "--data", "x.jsonl"},
			"--threads 2,1: 2 devices' threads, but --devices 3"},
		{"plan: speeds without data", []string{"plan", "--model", "mlp", "--devices", "2", "--threads", "2,1"}, "give --data"},
		{"plan: job devices that differ", []string{"plan", "--model", "mlp", "--job-devices", "4", "--straggler", "1:2"},
			"--job-devices 4: plans devices alike"},
		{"plan: speeds of another K", []string{"plan", "--model", "mlp", "--devices", "2", "--speeds", "1,0.5,1"}, "--speeds: 3 devices' speeds, but --devices 2"},
		{"predict: a speed of 0", []string{"predict", "--data", "x.jsonl", "--speeds", "1,0"}, "--speeds 0: want a positive"},
		{"plan: a straggler past K", []string{"plan", "--model", "mlp", "--devices", "2", "--straggler", "2:2"}, "want a device below --devices 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := run(t, tc.args...)
			if code != ExitUsage || out != "" || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 2 and %q", code, out, errOut, tc.want)
			}
		})
	}
}

// TestDevicesThatDifferEndToEnd profiles the mlp on devices of 2 and 1
// threads balanced by speed, and K = 1 at each thread count, then
// forecasts and plans the pipeline of 2 and 1 threads from the K = 1
// runs: the record holds the devices' threads and speeds, predict prices
// the devices from the runs of each thread count and refuses a count it
// has none of, and plan splits by speed and says so.
func TestDevicesThatDifferEndToEnd(t *testing.T) {
	dir := t.TempDir()
	mlp := []string{"--model", "mlp", "--batch", "8", "--steps", "2", "--warmup", "1", "--rounds", "1", "--schedule", "gpipe"}
	profile := func(out string, args ...string) {
		t.Helper()
		a := append(append([]string{"profile", "--out", filepath.Join(dir, out), "--output", "csv"}, mlp...), args...)
		if code, _, errOut := run(t, append(a, "--microbatches", "2")...); code != ExitOK {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
	}
	profile("k2", "--devices", "2", "--threads", "2,1", "--balance", "speed")
	code, _, errOut := run(t, append([]string{"profile", "--output", "csv", "--devices", "2", "--microbatches", "2", "--straggler", "1:1.5"}, mlp...)...)
	if code != ExitOK || !strings.Contains(errOut, "--balance speed gives the slower ones less work") {
		t.Errorf("a straggler balanced by time by default: exit %d, want a hint at --balance speed: %s", code, errOut)
	}
	profile("k1", "--devices", "1", "--threads", "1")
	profile("k1-two", "--devices", "1", "--threads", "2")
	recs, _, err := profiler.ReadFile(filepath.Join(dir, "k2", "runs.jsonl"), profiler.ReadOptions{})
	if err != nil || len(recs) != 1 {
		t.Fatalf("k2: %d records, %v", len(recs), err)
	}
	c := recs[0].Config
	if !slices.Equal(c.DeviceThreads, []int{2, 1}) || len(c.DeviceSpeeds) != 2 || c.DeviceSpeeds[0] != 1 || c.Threads != 2 || c.Balance != "speed" {
		t.Errorf("record: threads %d, device threads %v, speeds %v, balance %q; want 2, [2 1], two from 1, speed",
			c.Threads, c.DeviceThreads, c.DeviceSpeeds, c.Balance)
	}
	if d := recs[0].Env.Devices; len(d) != 2 || d[0].Threads != 2 || d[1].Threads != 1 {
		t.Errorf("record's devices %+v, want of 2 and 1 threads", d)
	}

	k1 := filepath.Join(dir, "k1", "runs.jsonl") + "," + filepath.Join(dir, "k1-two", "runs.jsonl")
	code, out, errOut := run(t, "predict", "--data", k1, "--devices", "2", "--microbatches", "2", "--schedule", "gpipe",
		"--threads", "2,1", "--balance", "speed", "--output", "csv")
	if code != ExitOK {
		t.Fatalf("predict --threads 2,1: exit %d: %s", code, errOut)
	}
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil || len(rows) != 2 {
		t.Fatalf("predict: %d rows, %v:\n%s", len(rows), err, out)
	}
	if ti := slices.Index(rows[0], "threads"); ti < 0 || rows[1][ti] != "2,1" {
		t.Errorf("predict: threads column of %v, want 2,1", rows)
	}
	code, _, errOut = run(t, "predict", "--data", filepath.Join(dir, "k1-two", "runs.jsonl"), "--devices", "2", "--microbatches", "2",
		"--schedule", "gpipe", "--threads", "2,1")
	if code != ExitUsage || !strings.Contains(errOut, "profile --devices 1 --threads 1") {
		t.Errorf("predict --threads 2,1 without runs at 1: exit %d, %q; want exit 2 naming the runs to measure", code, errOut)
	}

	step := func(speeds string) float64 {
		t.Helper()
		code, out, errOut := run(t, "predict", "--data", k1, "--devices", "2", "--microbatches", "2", "--schedule", "gpipe",
			"--threads", "1", "--speeds", speeds, "--balance", "macs", "--output", "csv")
		rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
		if code != ExitOK || err != nil || len(rows) != 2 {
			t.Fatalf("predict --speeds %s: exit %d, %v:\n%s%s", speeds, code, err, out, errOut)
		}
		v, err := strconv.ParseFloat(rows[1][slices.Index(rows[0], "step_nanos_median")], 64)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if alike, slow := step("1,1"), step("1,0.25"); !(slow > alike) {
		t.Errorf("predict --speeds 1,0.25: step %.0f ns, not longer than at 1,1 (%.0f ns)", slow, alike)
	}
	code, out, errOut = run(t, "plan", "--model", "mlp", "--batch", "8", "--data", k1, "--devices", "2", "--threads", "2,1",
		"--schedule", "gpipe,1f1b", "--microbatches", "2,4")
	if code != ExitOK || !strings.Contains(out, "of 2,1 thread(s)") || !strings.Contains(out, "each device's speed") {
		t.Errorf("plan --threads 2,1: exit %d, want a plan of 2,1 threads split by speed:\n%s%s", code, out, errOut)
	}
}
