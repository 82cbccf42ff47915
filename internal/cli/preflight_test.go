package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/tensor"
)

// TestProfileRefusesWhatCannotRun drives profile through every kind of
// configuration that cannot run and checks that each is refused before
// anything trains: exit 2, a message naming the problem, no panic or
// runtime text, and the output dataset untouched.
func TestProfileRefusesWhatCannotRun(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want []string // every one appears in the message
	}{
		{name: "batch norm of one value per channel in a micro-batch",
			args: []string{"--model", "inceptionv3", "--image", "80", "--batch", "32", "--microbatches", "32", "--devices", "1", "--schedule", "single"},
			want: []string{"batchnorm2d", "Mixed_7a", "device 0", "more than 1 value per channel"}},
		{name: "batch norm of one value per channel in a coop shard",
			args: []string{"--model", "inceptionv3", "--image", "80", "--batch", "2", "--microbatches", "1", "--devices", "2", "--schedule", "coop", "--balance", "params"},
			// Both devices' prediction shards fail; whichever does first
			// (P0.s0 or P0.s1) names the fault.
			want: []string{"coop", "batchnorm2d", "P0.s", "Mixed_7a", "more than 1 value per channel"}},
		{name: "inputs too large for memory", args: []string{"--image", "100000"},
			want: []string{"2 of 2 configurations cannot run", "TiB", "available", "--force"}},
		{name: "a batch too large for memory",
			args: []string{"--model", "resnet50", "--width", "1", "--image", "224", "--batch", "4096", "--devices", "1", "--schedule", "single", "--microbatches", "1"},
			want: []string{"GiB", "available"}},
		{name: "more threads than a process may run", args: []string{"--threads", "100000"},
			want: []string{"--threads 100000", "OS threads"}},
		{name: "an input smaller than the model takes", args: []string{"--model", "inceptionv3", "--image", "32"},
			want: []string{"--image 32", "below the smallest"}},
		{name: "more devices than blocks", args: []string{"--model", "mlp", "--devices", "4"},
			want: []string{"--devices 4", "3 blocks"}},
		{name: "a batch no micro-batch count divides", args: []string{"--model", "mlp", "--batch", "6", "--microbatches", "4"},
			want: []string{"no combination", "4 equal micro-batches"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			data := filepath.Join(dir, "runs.jsonl")
			before := []byte("a line another tool wrote\n")
			if err := os.WriteFile(data, before, 0o644); err != nil {
				t.Fatal(err)
			}
			args := append([]string{"profile", "--steps", "1", "--warmup", "0", "--out", dir}, tc.args...)
			code, out, errOut := execute(context.Background(), args...)
			if code != ExitUsage || out != "" {
				t.Errorf("exit %d, stdout %q; want exit %d and nothing", code, out, ExitUsage)
			}
			for _, w := range tc.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr %q lacks %q", errOut, w)
				}
			}
			for _, bad := range []string{"panic:", "goroutine ", "runtime.", "fatal error", "run 1 of"} {
				if strings.Contains(errOut, bad) {
					t.Errorf("stderr holds %q: %s", bad, errOut)
				}
			}
			if got, err := os.ReadFile(data); err != nil || string(got) != string(before) {
				t.Errorf("the dataset changed: %q, %v", got, err)
			}
		})
	}
}

// TestGPUShortfall checks the per-GPU memory check: devices k on GPU
// k mod the count, their peaks summed in one process, each alone in a
// multi-process run.
func TestGPUShortfall(t *testing.T) {
	const gib = int64(1) << 30
	mem := func(peaks ...int64) []tensor.MemStats {
		out := make([]tensor.MemStats, len(peaks))
		for i, p := range peaks {
			out[i].PeakTotalBytes = p
		}
		return out
	}
	one := config.Config{}
	mpi := config.Config{Transport: profiler.TransportMPI}
	for _, c := range []struct {
		cfg  config.Config
		mem  []tensor.MemStats
		free []int64
		want string // a substring of the refusal, "" for none
	}{
		{one, mem(3*gib, 3*gib), []int64{8 * gib}, ""},
		{one, mem(5*gib, 5*gib), []int64{8 * gib}, "GPU 0 need 10.0 GiB"},
		{one, mem(5*gib, 5*gib), []int64{8 * gib, 8 * gib}, ""},
		{one, mem(1*gib, 1*gib, 1*gib, 7*gib), []int64{8 * gib, 7 * gib}, "GPU 1 need 8.00 GiB"},
		{mpi, mem(5*gib, 5*gib), []int64{8 * gib}, ""},
		{mpi, mem(9 * gib), []int64{8 * gib}, "GPU 0 need 9.00 GiB"},
	} {
		got := gpuShortfall(c.cfg, c.mem, c.free)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("gpuShortfall(%v, free %v) = %q, want %q", c.mem, c.free, got, c.want)
		}
	}
}
