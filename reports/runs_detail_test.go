package reports

import (
	"bytes"
	"testing"
)

func TestRunDetailTablesGolden(t *testing.T) {
	recs := runsSample()[:2]
	tabs := RunDetailTables(recs)
	if len(tabs) != 2*len(recs) {
		t.Fatalf("got %d tables for %d records, want two each", len(tabs), len(recs))
	}
	for _, f := range allFormats {
		var buf bytes.Buffer
		for _, tab := range tabs {
			if err := Render(&buf, tab, f); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
		}
		checkGolden(t, "runs_detail."+extension[f], buf.Bytes())
	}
}
