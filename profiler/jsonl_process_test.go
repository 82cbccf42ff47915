package profiler

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// The appenders of the multi-process tests are this test binary run
// again with appendRoleEnv set, which runs TestAppendHelperProcess alone.
const (
	appendRoleEnv  = "PIPECAST_PROFILER_APPEND_ROLE" // roleWriter or roleTearer
	appendPathEnv  = "PIPECAST_PROFILER_APPEND_PATH"
	appendIndexEnv = "PIPECAST_PROFILER_APPEND_INDEX"

	roleWriter = "writer"
	roleTearer = "tearer"
)

// writerCalls is how many times each writer calls Append.
const writerCalls = 9

// writerEvents are the event counts of the records writers append: none,
// a short run's, and a long run's, whose line is over 1 MiB (about 137
// bytes an event).
var writerEvents = [...]int{0, 2500, 8000}

// writerAppend returns what writer w appends in its call c: a single
// record on even calls, three records of different sizes, the largest
// first, on odd ones.
func writerAppend(w, c int) []Record {
	id := func(s int) string { return fmt.Sprintf("w%d-%02d-%d", w, c, s) }
	if c%2 == 0 {
		return []Record{testRecord(id(0), writerEvents[(c/2)%len(writerEvents)])}
	}
	return []Record{testRecord(id(0), writerEvents[2]), testRecord(id(1), writerEvents[0]), testRecord(id(2), writerEvents[1])}
}

// writerRecords returns every record writers 0 … writers−1 append.
func writerRecords(writers int) []Record {
	var all []Record
	for w := range writers {
		for c := range writerCalls {
			all = append(all, writerAppend(w, c)...)
		}
	}
	return all
}

// appender is a helper process and what it printed.
type appender struct {
	*exec.Cmd
	out bytes.Buffer
}

// startAppender starts the test binary as an appender of the given role;
// stdin, when not nil, becomes the appender's standard input.
func startAppender(t *testing.T, role, path string, index int, stdin io.Reader) *appender {
	t.Helper()
	a := &appender{Cmd: exec.Command(os.Args[0], "-test.run=^TestAppendHelperProcess$", "-test.count=1")}
	a.Env = append(os.Environ(), appendRoleEnv+"="+role, appendPathEnv+"="+path, appendIndexEnv+"="+strconv.Itoa(index))
	a.Stdin, a.Stdout, a.Stderr = stdin, &a.out, &a.out
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	return a
}

// wait waits for the appender to exit and fails the test, with what the
// appender printed, if it failed.
func (a *appender) wait(t *testing.T, name string) {
	t.Helper()
	if err := a.Wait(); err != nil {
		t.Errorf("%s: %v\n%s", name, err, a.out.Bytes())
	}
}

// TestAppendConcurrentProcesses appends from several processes at once,
// which the in-process mutex does not serialise, lines of up to 1.1 MiB,
// one or three records a call, and checks that every record arrives once,
// whole, and that the dataset holds nothing else.
func TestAppendConcurrentProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes and writes 30 MB")
	}
	path := filepath.Join(t.TempDir(), "runs.jsonl")
	const writers = 4
	procs := make([]*appender, writers)
	for w := range procs {
		procs[w] = startAppender(t, roleWriter, path, w, nil)
	}
	for w, p := range procs {
		p.wait(t, "writer "+strconv.Itoa(w))
	}
	if t.Failed() {
		return
	}
	if bad := checkAppended(t, path, writerRecords(writers)); len(bad) != 0 {
		t.Errorf("bad lines %v, want none", bad)
	}
}

// checkAppended reads the dataset at path and checks that it holds each
// record of want exactly once and unchanged, and no other record. It
// returns the lines skipped as truncated; any other bad line fails the
// test.
func checkAppended(t *testing.T, path string, want []Record) []LineError {
	t.Helper()
	got, bad, err := ReadFile(path, ReadOptions{})
	if err != nil {
		t.Fatalf("ReadFile: %v (a line damaged by a concurrent append?)", err)
	}
	for _, le := range bad {
		if !errors.Is(le.Err, ErrTruncated) {
			t.Errorf("line %d: %v, want only truncated lines", le.Line, le.Err)
		}
	}
	wantByID := make(map[string]*Record, len(want))
	for i := range want {
		wantByID[want[i].ID] = &want[i]
	}
	seen := make(map[string]bool, len(got))
	for i := range got {
		r := &got[i]
		if seen[r.ID] {
			t.Errorf("record %s appears twice", r.ID)
			continue
		}
		seen[r.ID] = true
		w, ok := wantByID[r.ID]
		switch {
		case ok && !reflect.DeepEqual(r, w):
			t.Errorf("record %s changed on its way through the file", r.ID)
		case !ok:
			t.Errorf("record %s was never appended", r.ID)
		}
	}
	var missing []string
	for _, w := range want {
		if !seen[w.ID] {
			missing = append(missing, w.ID)
		}
	}
	if len(missing) > 0 {
		t.Errorf("%d of %d records lost: %s", len(missing), len(want), strings.Join(missing, " "))
	}
	return bad
}

// TestAppendHelperProcess is an appender of the multi-process tests; run
// alone it does nothing.
func TestAppendHelperProcess(t *testing.T) {
	role, path := os.Getenv(appendRoleEnv), os.Getenv(appendPathEnv)
	if role == "" {
		t.Skip("an appender started by the multi-process tests")
	}
	index, err := strconv.Atoi(os.Getenv(appendIndexEnv))
	if err != nil {
		t.Fatal(err)
	}
	switch role {
	case roleWriter:
		for c := range writerCalls {
			if err := Append(path, writerAppend(index, c)...); err != nil {
				t.Fatal(err)
			}
		}
	case roleTearer:
		// The parent closes stdin when the writers are done.
		stop := make(chan struct{})
		go func() {
			io.Copy(io.Discard, os.Stdin)
			close(stop)
		}()
		tearAppends(t, path, stop)
	default:
		t.Fatalf("unknown role %q", role)
	}
}
