package profiler

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// goldenPath holds the records of goldenRecords as Append writes them:
// a change to the encoding of version 1 shows up as a diff of this file.
const goldenPath = "testdata/records_v1.jsonl"

func goldenRecords() []Record {
	return []Record{testRecord("golden-measured", 6), predictedRecord("golden-predicted")}
}

func TestGolden(t *testing.T) {
	tmp := filepath.Join(t.TempDir(), "runs.jsonl")
	if err := Append(tmp, goldenRecords()...); err != nil {
		t.Fatal(err)
	}
	written, err := os.ReadFile(tmp)
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(goldenPath, written, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	golden, err := os.ReadFile(goldenPath)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(written, golden) {
		t.Errorf("Append wrote\n%s\nwant (%s)\n%s", written, goldenPath, golden)
	}

	// Read the golden file and write it again: the same records and the
	// same bytes.
	recs, bad, err := ReadFile(goldenPath, ReadOptions{})
	if err != nil || len(bad) != 0 {
		t.Fatalf("ReadFile(%s): err %v, bad lines %v", goldenPath, err, bad)
	}
	if !reflect.DeepEqual(recs, goldenRecords()) {
		t.Errorf("ReadFile(%s):\ngot  %+v\nwant %+v", goldenPath, recs, goldenRecords())
	}
	again := filepath.Join(t.TempDir(), "again.jsonl")
	if err := Append(again, recs...); err != nil {
		t.Fatal(err)
	}
	if rewritten, _ := os.ReadFile(again); !bytes.Equal(rewritten, golden) {
		t.Errorf("write → read → write changed the bytes:\n%s\nwant\n%s", rewritten, golden)
	}
}

// FuzzReadRecords feeds Read arbitrary datasets. Read must not panic;
// with SkipBad it must not fail; every record it returns must be valid
// and survive a write → read round trip; and without SkipBad it must
// either fail at a reported line or return the same records.
func FuzzReadRecords(f *testing.F) {
	golden, err := os.ReadFile(goldenPath)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(golden)
	f.Add(golden[:len(golden)/2])
	f.Add(append([]byte("\n\n{\"schema\":2}\nnot json\n"), golden...))
	f.Add([]byte(`{"schema":1,"kind":"measured","id":"x"}` + "\n"))
	f.Add([]byte("null\n[]\n{}\n\"\"\n"))
	f.Fuzz(checkRead)
}

// checkRead is the property FuzzReadRecords checks on data.
func checkRead(t *testing.T, data []byte) {
	{
		lenient, bad, err := Read(bytes.NewReader(data), "fuzz", ReadOptions{SkipBad: true})
		if err != nil {
			t.Fatalf("Read with SkipBad: %v", err)
		}
		lines := bytes.Count(data, []byte("\n")) + 1
		for i, le := range bad {
			if le.Line < 1 || le.Line > lines || (i > 0 && le.Line <= bad[i-1].Line) || le.Err == nil {
				t.Fatalf("bad line %d of %d lines: %v", le.Line, lines, le.Err)
			}
		}
		for _, r := range lenient {
			if err := r.Validate(); err != nil {
				t.Fatalf("Read returned an invalid record: %v", err)
			}
			first, err := json.Marshal(&r)
			if err != nil {
				t.Fatalf("marshal a record read: %v", err)
			}
			back, bad2, err := Read(bytes.NewReader(append(first, '\n')), "again", ReadOptions{})
			if err != nil || len(bad2) != 0 || len(back) != 1 {
				t.Fatalf("read a written record: err %v, bad %v, %d records", err, bad2, len(back))
			}
			second, _ := json.Marshal(&back[0])
			if !bytes.Equal(first, second) {
				t.Fatalf("write → read → write changed\n%s\ninto\n%s", first, second)
			}
		}

		strict, strictBad, err := Read(bytes.NewReader(data), "fuzz", ReadOptions{})
		if err != nil {
			var le *LineError
			if !errors.As(err, &le) || !strings.HasPrefix(err.Error(), "fuzz:") {
				t.Fatalf("Read error %v is not a *LineError", err)
			}
			return
		}
		if !reflect.DeepEqual(strict, lenient) || !reflect.DeepEqual(strictBad, bad) {
			t.Fatalf("without SkipBad and no error, got %d records and %v; with it %d and %v",
				len(strict), strictBad, len(lenient), bad)
		}
		for _, le := range strictBad {
			if !errors.Is(le.Err, ErrTruncated) {
				t.Fatalf("without SkipBad, line %d skipped for %v; only truncated lines may be", le.Line, le.Err)
			}
		}
	}
}
