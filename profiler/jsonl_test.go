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

// TestAppendAfterTruncatedTail writes part of a line, as a crash in the
// middle of Append's write leaves it, and checks that ReadFile reports
// and skips it, that the next Append ends it and starts a line of its
// own, and that the file then reads back with the records appended.
func TestAppendAfterTruncatedTail(t *testing.T) {
	before, after, extra := testRecord("before", 2), testRecord("after", 3), predictedRecord("extra")
	lost := testRecord("lost", 2)
	lost.Env.Host = "bänk-ü" // two-byte characters to cut in half
	large := testRecord("large", 8000)
	line := func(r Record) string { return marshalLine(t, r) }
	tests := []struct {
		name    string
		prior   []Record // appended before the crash
		torn    string   // what the crash left
		tornIs  bool     // the torn part holds a whole record, without its newline
		wantIDs []string // after the next Append of after and extra
	}{
		{name: "half a line", prior: []Record{before}, torn: line(lost)[:len(line(lost))/2]},
		{name: "first byte only", prior: []Record{before}, torn: "{"},
		{name: "inside a key", prior: []Record{before}, torn: `{"sche`},
		{name: "inside a two-byte character", prior: []Record{before}, torn: line(lost)[:strings.Index(line(lost), "ä")+1]},
		{name: "after a value", prior: []Record{before}, torn: line(lost)[:strings.Index(line(lost), `,"kind"`)]},
		{name: "a large line", prior: []Record{before}, torn: line(large)[:len(line(large))*3/4]},
		{name: "the only line", torn: line(lost)[:100]},
		{name: "all but the newline", prior: []Record{before}, torn: strings.TrimSuffix(line(lost), "\n"), tornIs: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "runs.jsonl")
			var want strings.Builder
			for _, r := range tt.prior {
				if err := Append(path, r); err != nil {
					t.Fatal(err)
				}
				want.WriteString(line(r))
			}
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteString(tt.torn); err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			want.WriteString(tt.torn + "\n")

			tornLine := len(tt.prior) + 1
			wantBefore, wantBad := recordIDs(tt.prior), []int{tornLine}
			if tt.tornIs {
				wantBefore, wantBad = append(wantBefore, lost.ID), nil
			}
			recs, bad, err := ReadFile(path, ReadOptions{})
			if err != nil {
				t.Fatalf("ReadFile after the crash: %v", err)
			}
			if got := recordIDs(recs); !slices.Equal(got, wantBefore) {
				t.Errorf("records after the crash %v, want %v", got, wantBefore)
			}
			checkTruncated(t, bad, wantBad)

			if err := Append(path, after, extra); err != nil {
				t.Fatal(err)
			}
			want.WriteString(line(after) + line(extra))
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if string(data) != want.String() {
				t.Errorf("file after the next Append is not the records, the torn line ended by one newline, and the new lines")
			}
			recs, bad, err = ReadFile(path, ReadOptions{})
			if err != nil {
				t.Fatalf("ReadFile after the next Append: %v", err)
			}
			wantRecs := slices.Concat(tt.prior, []Record{after, extra})
			if tt.tornIs {
				wantRecs = slices.Concat(tt.prior, []Record{lost, after, extra})
			}
			if !reflect.DeepEqual(recs, wantRecs) {
				t.Errorf("records after the next Append %v, want %v", recordIDs(recs), recordIDs(wantRecs))
			}
			checkTruncated(t, bad, wantBad)
		})
	}
}

// checkTruncated checks that bad holds exactly the given lines, each
// truncated.
func checkTruncated(t *testing.T, bad []LineError, lines []int) {
	t.Helper()
	if got := lineNumbers(bad); !slices.Equal(got, lines) {
		t.Errorf("bad lines %v (%v), want %v", got, bad, lines)
	}
	for _, le := range bad {
		if !errors.Is(&le, ErrTruncated) || le.Path == "" {
			t.Errorf("line %d: %v, want %v with the path", le.Line, le.Err, ErrTruncated)
		}
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
