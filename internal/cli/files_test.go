package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckOutputFiles(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path, want string // want: "" for no error, else a part of the message
	}{
		{"", ""},
		{filepath.Join(dir, "new.svg"), ""},
		{file, ""}, // an existing file is overwritten
		{dir, "a directory"},
		{filepath.Join(dir, "missing", "x.svg"), "no such file or directory"},
		{filepath.Join(file, "x.svg"), "is not a directory"},
	}
	for _, tc := range tests {
		err := checkOutputFiles("pprof", "", "svg", tc.path)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q: %v", tc.path, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "--svg ")):
			t.Errorf("%q: error %v, want --svg and %q", tc.path, err, tc.want)
		case tc.want != "" && !isUsage(err):
			t.Errorf("%q: %T is not a usage error", tc.path, err)
		}
	}
	// The probe leaves nothing behind.
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 1 {
		t.Errorf("the directory holds %d entries after the checks, want only %s (%v)", len(entries), file, err)
	}
}

// isUsage says whether err is a usage error (exit code 2).
func isUsage(err error) bool {
	_, ok := err.(*UsageError)
	return ok
}

// TestOutputCheckedBeforeWork checks that an export to a directory that
// does not exist stops profile before it trains anything.
func TestOutputCheckedBeforeWork(t *testing.T) {
	dir := t.TempDir()
	code, out, errOut := run(t, "profile", "--model", "mlp", "--out", dir, "--trace", filepath.Join(dir, "missing", "t.json"))
	if code != ExitUsage {
		t.Fatalf("exit %d, want %d: %s", code, ExitUsage, errOut)
	}
	if out != "" {
		t.Errorf("profile printed results before failing:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "runs.jsonl")); !os.IsNotExist(err) {
		t.Errorf("profile ran: runs.jsonl exists (%v)", err)
	}
}

func TestReadRecordsCapsSkipNotes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(path, []byte(strings.Repeat("not a record\n", 10)), 0o644); err != nil {
		t.Fatal(err)
	}
	var errOut bytes.Buffer
	recs, err := readRecords(&errOut, path)
	if err != nil || len(recs) != 0 {
		t.Fatalf("%d records, %v", len(recs), err)
	}
	lines := strings.Split(strings.TrimSpace(errOut.String()), "\n")
	if len(lines) != maxSkipNotes+1 || !strings.Contains(lines[maxSkipNotes], "7 more lines that hold no run record") {
		t.Errorf("notes:\n%s\nwant %d named lines and a count of 7 more", errOut.String(), maxSkipNotes)
	}
}

func TestCheckDatasetDir(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	taken := filepath.Join(dir, "taken")
	if err := os.MkdirAll(filepath.Join(taken, "runs.jsonl"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		dir, want string // want: "" for no error, else a part of the message
	}{
		{"", ""},
		{dir, ""},
		{filepath.Join(dir, "new", "deeper"), ""}, // made at the first record
		{file, "not a directory"},
		{filepath.Join(file, "runs"), "is not a directory"},
		{taken, "is a directory, not a dataset"},
	}
	for _, tc := range tests {
		err := checkDatasetDir("out", tc.dir)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q: %v", tc.dir, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "--out ")):
			t.Errorf("%q: error %v, want --out and %q", tc.dir, err, tc.want)
		case tc.want != "" && !isUsage(err):
			t.Errorf("%q: %T is not a usage error", tc.dir, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "new")); !os.IsNotExist(err) {
		t.Errorf("the check made the directory it only checks (%v)", err)
	}
}

// TestOutDirCheckedBeforeWork checks that --out naming a file stops
// profile and predict before they train or forecast anything, and leaves
// the file as it was.
func TestOutDirCheckedBeforeWork(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"profile", "--model", "mlp", "--out", file},
		{"predict", "--data", "../../predictor/testdata/fit_runs.jsonl", "--out", file},
	} {
		code, out, errOut := run(t, args...)
		if code != ExitUsage || !strings.Contains(errOut, "--out "+file+": not a directory") {
			t.Errorf("%s: exit %d, stderr %q; want %d and --out's message", args[0], code, errOut, ExitUsage)
		}
		if out != "" {
			t.Errorf("%s printed results before failing:\n%s", args[0], out)
		}
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != "keep" {
		t.Errorf("the file now holds %q (%v)", b, err)
	}
}
