package profiler

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// marshalLine is a record as Append writes it.
func marshalLine(t testing.TB, r Record) string {
	t.Helper()
	b, err := json.Marshal(&r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b) + "\n"
}

func TestAppendReadRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a", "b", "runs.jsonl")
	want := []Record{testRecord("r1", 40), predictedRecord("r2")}
	if err := Append(path, want[0]); err != nil {
		t.Fatalf("Append: %v", err)
	}
	if err := Append(path, want[1:]...); err != nil {
		t.Fatalf("Append: %v", err)
	}
	got, bad, err := ReadFile(path, ReadOptions{})
	if err != nil || len(bad) != 0 {
		t.Fatalf("ReadFile: err %v, bad lines %v", err, bad)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ReadFile after Append:\ngot  %+v\nwant %+v", got, want)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(data, []byte("\n")); n != 2 || data[len(data)-1] != '\n' {
		t.Errorf("file has %d newlines, last byte %q; want 2 lines each ending in a newline", n, data[len(data)-1])
	}
}

func TestAppendInvalidWritesNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runs.jsonl")
	badRec := testRecord("bad", 0)
	badRec.Config.Batch = 0
	err := Append(path, testRecord("good", 0), badRec)
	if err == nil || !strings.Contains(err.Error(), "batch") {
		t.Fatalf("Append with an invalid record = %v, want an error naming batch", err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("Append of an invalid record created the file (stat: %v)", err)
	}
}

func TestReadLines(t *testing.T) {
	r1, r2, r3 := marshalLine(t, testRecord("r1", 3)), marshalLine(t, predictedRecord("r2")), marshalLine(t, testRecord("r3", 0))
	newer := strings.Replace(r2, `"schema":1`, `"schema":2`, 1)
	// A later version may change a field's type; its version still
	// explains why the line cannot be read.
	newerChanged := strings.Replace(newer, `"steps":null`, `"steps":{"count":5}`, 1)
	unknownField := strings.Replace(r2, `{"schema":1,`, `{"schema":1,"added_later":{"x":[1,2]},`, 1)
	tests := []struct {
		name     string
		input    string
		opts     ReadOptions
		wantIDs  []string
		wantBad  []int // lines reported
		errLine  int   // the line of the error, 0 for none
		errIs    error
		errMatch string
	}{
		{name: "empty", input: ""},
		{name: "three", input: r1 + r2 + r3, wantIDs: []string{"r1", "r2", "r3"}},
		{name: "blank lines ignored", input: "\n" + r1 + "  \n\r\n" + r2 + "\t\n", wantIDs: []string{"r1", "r2"}},
		{name: "no final newline", input: r1 + strings.TrimSuffix(r2, "\n"), wantIDs: []string{"r1", "r2"}},
		{name: "truncated last line", input: r1 + r2 + r3[:len(r3)/2], wantIDs: []string{"r1", "r2"}, wantBad: []int{3}},
		{name: "truncated last line skip bad", input: r1 + r3[:40], opts: ReadOptions{SkipBad: true}, wantIDs: []string{"r1"}, wantBad: []int{2}},
		{name: "truncated inside a literal", input: r1 + `{"schema":1,"oversubscribed":tr`, wantIDs: []string{"r1"}, wantBad: []int{2}},
		{name: "truncated line ended by a later append", input: r1 + r3[:len(r3)/3] + "\n" + r2, wantIDs: []string{"r1", "r2"}, wantBad: []int{2}},
		{name: "garbage in the middle", input: r1 + "not json at all\n" + r2, errLine: 2, errMatch: "invalid run record"},
		{name: "garbage in the middle skip bad", input: r1 + "not json at all\n" + r2, opts: ReadOptions{SkipBad: true}, wantIDs: []string{"r1", "r2"}, wantBad: []int{2}},
		{name: "two values on a line", input: r1 + `{"schema":1} {"schema":1}` + "\n", errLine: 2},
		{name: "json that is no record", input: "null\n[1,2]\n", opts: ReadOptions{SkipBad: true}, wantBad: []int{1, 2}},
		{name: "invalid record", input: r1 + strings.Replace(r3, `"batch":8`, `"batch":-8`, 1), errLine: 2, errMatch: "invalid run record r3: config: batch -8"},
		{name: "newer schema", input: r1 + newer, errLine: 2, errIs: &SchemaVersionError{}, errMatch: "schema version 2 is newer than this pipecast reads (1): upgrade pipecast"},
		{name: "newer schema changed types", input: newerChanged + r1, errLine: 1, errIs: &SchemaVersionError{}, errMatch: "schema version 2 is newer"},
		{name: "newer schema skip bad", input: newer + r1, opts: ReadOptions{SkipBad: true}, wantIDs: []string{"r1"}, wantBad: []int{1}},
		{name: "unknown fields allowed", input: unknownField, wantIDs: []string{"r2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			recs, bad, err := Read(strings.NewReader(tt.input), "runs.jsonl", tt.opts)
			if tt.errLine != 0 {
				var le *LineError
				if !errors.As(err, &le) || le.Line != tt.errLine || le.Path != "runs.jsonl" {
					t.Fatalf("Read error = %v, want a *LineError at runs.jsonl:%d", err, tt.errLine)
				}
				if prefix := "runs.jsonl:" + strconv.Itoa(tt.errLine) + ": "; !strings.HasPrefix(err.Error(), prefix) || !strings.Contains(err.Error(), tt.errMatch) {
					t.Errorf("error %q: want prefix %q and %q", err, prefix, tt.errMatch)
				}
				var sv *SchemaVersionError
				if tt.errIs != nil && !errors.As(err, &sv) {
					t.Errorf("error %v is not a *SchemaVersionError", err)
				}
				if recs != nil {
					t.Errorf("records with an error: got %d, want none", len(recs))
				}
				return
			}
			if err != nil {
				t.Fatalf("Read error = %v, want nil", err)
			}
			if got := recordIDs(recs); !slices.Equal(got, tt.wantIDs) {
				t.Errorf("records %v, want %v", got, tt.wantIDs)
			}
			if got := lineNumbers(bad); !slices.Equal(got, tt.wantBad) {
				t.Errorf("bad lines %v (%v), want %v", got, bad, tt.wantBad)
			}
			for _, le := range bad {
				if strings.Contains(tt.name, "truncated") && !errors.Is(&le, ErrTruncated) {
					t.Errorf("line %d: %v, want ErrTruncated", le.Line, le.Err)
				}
			}
		})
	}
}

func TestAppendAfterTruncatedTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runs.jsonl")
	if err := Append(path, testRecord("before", 2)); err != nil {
		t.Fatal(err)
	}
	// What a crash in the middle of a write leaves.
	partial := marshalLine(t, testRecord("lost", 2))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(partial[:len(partial)/2]); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := Append(path, testRecord("after", 2)); err != nil {
		t.Fatal(err)
	}
	recs, bad, err := ReadFile(path, ReadOptions{})
	if err != nil {
		t.Fatalf("ReadFile: %v", err)
	}
	if got, want := recordIDs(recs), []string{"before", "after"}; !slices.Equal(got, want) {
		t.Errorf("records %v, want %v", got, want)
	}
	if len(bad) != 1 || bad[0].Line != 2 || !errors.Is(bad[0].Err, ErrTruncated) {
		t.Errorf("bad lines %v, want line 2 truncated", bad)
	}
}

func TestAppendConcurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runs.jsonl")
	const writers, each = 6, 4
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				// Lines of very different lengths, some far beyond a
				// pipe buffer, make interleaving likely if it can happen.
				n := w*each + i
				if err := Append(path, testRecord(idFor(n), (n%3)*1500)); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	checkWholeLines(t, path, writers*each)
}

// checkWholeLines checks that path holds exactly n valid records with the
// IDs idFor(0..n-1), in any order, and nothing else.
func checkWholeLines(t *testing.T, path string, n int) {
	t.Helper()
	recs, bad, err := ReadFile(path, ReadOptions{})
	if err != nil || len(bad) != 0 {
		t.Fatalf("ReadFile: err %v, bad lines %v", err, bad)
	}
	got := recordIDs(recs)
	slices.Sort(got)
	want := make([]string, n)
	for i := range want {
		want[i] = idFor(i)
	}
	if !slices.Equal(got, want) {
		t.Errorf("records %v, want %v", got, want)
	}
}
