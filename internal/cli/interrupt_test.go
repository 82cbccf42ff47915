package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/pipecast/pipecast/profiler"
)

// mainEnv makes the test binary run pipecast's Main with the arguments
// after "--", so that tests can signal a real pipecast process.
const mainEnv = "PIPECAST_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(mainEnv) == "1" {
		for i, a := range os.Args {
			if a == "--" {
				os.Args = append([]string{"pipecast"}, os.Args[i+1:]...)
				break
			}
		}
		os.Exit(int(Main()))
	}
	os.Exit(m.Run())
}

// pipecastCmd returns a command that runs pipecast with args in this test
// binary.
func pipecastCmd(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], append([]string{"--"}, args...)...)
	cmd.Env = append(os.Environ(), mainEnv+"=1")
	return cmd
}

// TestInterruptedSweepResumes interrupts a sweep with SIGINT at varied
// points (and once with a second signal, which stops at once), checks
// that the dataset then holds only whole, valid records, and that
// --resume completes it with every configuration exactly once.
func TestInterruptedSweepResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a few sweeps of real processes")
	}
	sweep := []string{"profile", "--model", "mlp", "--width", "0.25", "--devices", "1,2", "--microbatches", "1,2",
		"--schedule", "gpipe,1f1b,coop", "--steps", "2", "--warmup", "1", "--rounds", "1", "--output", "csv"}
	const configs = 12
	for _, tc := range []struct {
		after  int // records written before the signal; −1: at once
		second bool
	}{{-1, false}, {1, false}, {5, false}, {9, false}, {3, true}} {
		t.Run(fmt.Sprintf("after %d records, second signal %v", tc.after, tc.second), func(t *testing.T) {
			dir := t.TempDir()
			data := filepath.Join(dir, "runs.jsonl")
			cmd := pipecastCmd(append(sweep, "--out", dir)...)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			for deadline := time.Now().Add(time.Minute); tc.after >= 0 && lines(data) < tc.after && time.Now().Before(deadline); {
				time.Sleep(time.Millisecond)
			}
			_ = cmd.Process.Signal(syscall.SIGINT)
			if tc.second {
				time.Sleep(5 * time.Millisecond)
				_ = cmd.Process.Signal(syscall.SIGINT)
			}
			_ = cmd.Wait()
			checkWholeRecords(t, data, configs, false)
			out, err := pipecastCmd(append(sweep, "--out", dir, "--resume")...).CombinedOutput()
			if err != nil {
				t.Fatalf("--resume: %v\n%s", err, out)
			}
			checkWholeRecords(t, data, configs, true)
		})
	}
}

// checkWholeRecords checks that path (absent for none) holds valid
// records, each of a distinct configuration, all of them when complete.
func checkWholeRecords(t *testing.T, path string, configs int, complete bool) {
	t.Helper()
	recs, bad, err := profiler.ReadFile(path, profiler.ReadOptions{})
	if errors.Is(err, fs.ErrNotExist) && !complete {
		return
	}
	if err != nil || len(bad) > 0 {
		t.Fatalf("%s: %v, bad lines %v", path, err, bad)
	}
	seen := map[string]bool{}
	for i := range recs {
		k := runKey(recs[i].Config, recs[i].Env.Backend, profiler.TransportOf(&recs[i].Env))
		if seen[k] {
			t.Errorf("%s: configuration %s %s K=%d M=%d twice", path, recs[i].Config.Model, recs[i].Config.Schedule, recs[i].Config.Devices, recs[i].Config.Micro)
		}
		seen[k] = true
	}
	if complete && len(recs) != configs {
		t.Errorf("%s: %d records after --resume, want %d", path, len(recs), configs)
	}
	t.Logf("%s: %d records (complete %v)", path, len(recs), complete)
}

// lines counts the complete lines of path (0 when it does not exist).
func lines(path string) int {
	b, _ := os.ReadFile(path)
	return bytes.Count(b, []byte{'\n'})
}
