package profiler

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// The environment of TestAppendChildProcess: the dataset and the first
// ID it appends.
const (
	childPathEnv  = "PIPECAST_PROFILER_APPEND_PATH"
	childFirstEnv = "PIPECAST_PROFILER_APPEND_FIRST"
	childRecords  = 5
)

// TestAppendConcurrentProcesses appends from several processes at once,
// which the in-process lock does not serialise, and checks that the
// dataset holds only whole lines.
func TestAppendConcurrentProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	path := filepath.Join(t.TempDir(), "runs.jsonl")
	const procs = 3
	cmds := make([]*exec.Cmd, procs)
	for p := range cmds {
		cmd := exec.Command(os.Args[0], "-test.run=^TestAppendChildProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), childPathEnv+"="+path, childFirstEnv+"="+strconv.Itoa(p*childRecords))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[p] = cmd
	}
	for p, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("process %d: %v", p, err)
		}
	}
	checkWholeLines(t, path, procs*childRecords)
}

// TestAppendChildProcess is one appender of
// TestAppendConcurrentProcesses; run alone it does nothing.
func TestAppendChildProcess(t *testing.T) {
	path := os.Getenv(childPathEnv)
	if path == "" {
		t.Skip("an appender started by TestAppendConcurrentProcesses")
	}
	first, err := strconv.Atoi(os.Getenv(childFirstEnv))
	if err != nil {
		t.Fatal(err)
	}
	for i := first; i < first+childRecords; i++ {
		if err := Append(path, testRecord(idFor(i), (i%3)*2000)); err != nil {
			t.Fatal(err)
		}
	}
}
