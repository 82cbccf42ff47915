package reports

import (
	"bytes"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/pipecast/pipecast/profiler"
)

// fitSample has four columns of ten characters each, so that every
// column is 13 characters of the rendered table (text, padding, border)
// and the table 4·13+1 = 53: column a never folds, c folds first, then d,
// then b.
func fitSample() *Table {
	cols := []Column{
		{Key: "a", Header: "aaaaaaaaaa"},
		{Key: "b", Header: "bbbbbbbbbb", Fold: 1},
		{Key: "c", Header: "cccccccccc", Fold: 3},
		{Key: "d", Header: "dddddddddd", Fold: 2},
		{Key: "m", Header: "machines only", Show: Machines, Fold: 9},
	}
	row := []Cell{String("0123456789"), String("0123456789"), String("0123456789"), String("0123456789"), Int(1)}
	return &Table{Title: "Title", Columns: cols, Rows: [][]Cell{row, row}, Footnotes: []string{"a note"}}
}

// renderedLines renders t in the table format and splits it into lines.
func renderedLines(t *testing.T, tab *Table) []string {
	t.Helper()
	var buf bytes.Buffer
	if err := Render(&buf, tab, FormatTable); err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
}

// widest is the width of the longest line.
func widest(lines []string) int {
	w := 0
	for _, l := range lines {
		w = max(w, runeWidth(l))
	}
	return w
}

// unwrap undoes wrapText.
func unwrap(s string) string { return strings.ReplaceAll(s, "\n", " ") }

// peopleHeaders lists the headers of the columns the table format shows.
func peopleHeaders(tab *Table) []string {
	var h []string
	for _, i := range tab.visible(People) {
		h = append(h, tab.Columns[i].Header)
	}
	return h
}

func TestFitFoldsInPriorityOrder(t *testing.T) {
	tests := []struct {
		name     string
		width    int
		want     []string // headers left
		wantNote string   // the last footnote; "" when none is added
	}{
		{name: "fits", width: 53, want: []string{"aaaaaaaaaa", "bbbbbbbbbb", "cccccccccc", "dddddddddd"}},
		{name: "one over", width: 52, want: []string{"aaaaaaaaaa", "bbbbbbbbbb", "dddddddddd"},
			wantNote: "folded: cccccccccc; --wide"},
		{name: "two folds", width: 39, want: []string{"aaaaaaaaaa", "bbbbbbbbbb"},
			wantNote: "folded: cccccccccc, dddddddddd; --wide"},
		{name: "all that may fold", width: 26, want: []string{"aaaaaaaaaa"},
			wantNote: "folded: bbbbbbbbbb, cccccccccc, dddddddddd; --wide"},
		{name: "never narrow enough", width: 5, want: []string{"aaaaaaaaaa"},
			wantNote: "folded: bbbbbbbbbb, cccccccccc, dddddddddd; --wide"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tab := fitSample()
			got := tab.Fit(tc.width, "--wide")
			if h := peopleHeaders(got); !slices.Equal(h, tc.want) {
				t.Errorf("columns: got %q, want %q", h, tc.want)
			}
			if got.Columns[len(got.Columns)-1].Key != "m" {
				t.Errorf("the machines' column folded: %+v", got.Columns)
			}
			// Notes wrap at the width: compare their words.
			note := ""
			if len(got.Footnotes) > 1 {
				note = unwrap(got.Footnotes[len(got.Footnotes)-1])
			}
			if note != tc.wantNote || unwrap(got.Footnotes[0]) != "a note" {
				t.Errorf("footnotes: got %q, want %q then %q", got.Footnotes, "a note", tc.wantNote)
			}
			if w := widest(renderedLines(t, got)); w > tc.width && tc.width >= 14 {
				t.Errorf("rendered %d wide, want at most %d", w, tc.width)
			}
			if !reflect.DeepEqual(tab, fitSample()) {
				t.Error("Fit changed the table it was given")
			}
		})
	}
}

func TestFitBringsBackColumnsThatFitAgain(t *testing.T) {
	// narrow folds first, but once wide is folded too there is room for
	// it again: 13 (a) + 7 (narrow) + 1 = 21.
	tab := &Table{
		Columns: []Column{
			{Key: "a", Header: "aaaaaaaaaa"},
			{Key: "wide", Header: "wwwwwwwwwwwwwwwwwwww", Fold: 1},
			{Key: "narrow", Header: "nnnn", Fold: 2},
		},
		Rows: [][]Cell{{String("x"), String("y"), String("z")}},
	}
	got := tab.Fit(25, "")
	if h := peopleHeaders(got); !slices.Equal(h, []string{"aaaaaaaaaa", "nnnn"}) {
		t.Errorf("columns: got %q, want a and nnnn", h)
	}
	if want := []string{"folded: wwwwwwwwwwwwwwwwwwww"}; len(got.Footnotes) != 1 || unwrap(got.Footnotes[0]) != want[0] {
		t.Errorf("footnotes: got %q, want %q", got.Footnotes, want)
	}
}

func TestFitShortTextsAndWrapping(t *testing.T) {
	long := "a description of many words that wraps between them"
	tab := &Table{
		Title: "A title long enough to wrap at thirty characters",
		Columns: []Column{
			{Key: "sched", Header: "schedule", ShortNote: "defaults not shown"},
			{Key: "desc", Header: "description", MaxWidth: 40},
		},
		Rows: [][]Cell{
			{{Value: "gpipe", Text: "gpipe (except-last)", Short: "gpipe"}, String(long)},
			{{Value: "1f1b", Text: "1f1b", Short: "1f1b"}, String(long)},
		},
		Footnotes: []string{"a footnote that is longer than the table is wide"},
	}
	t.Run("wrapping column narrows first", func(t *testing.T) {
		got := tab.Fit(50, "hint")
		lines := renderedLines(t, got)
		if w := widest(lines); w > 50 {
			t.Errorf("rendered %d wide, want at most 50:\n%s", w, strings.Join(lines, "\n"))
		}
		if got.Rows[0][0].Text != "gpipe (except-last)" || len(got.Footnotes) != 1 {
			t.Errorf("shortened or noted without need: %q, footnotes %q", got.Rows[0][0].Text, got.Footnotes)
		}
		if got.Columns[1].MaxWidth >= 40 || tab.Columns[1].MaxWidth != 40 {
			t.Errorf("MaxWidth: fitted %d, given %d; want under 40 and 40", got.Columns[1].MaxWidth, tab.Columns[1].MaxWidth)
		}
	})
	// The full labels need 22 characters beside the description's 20
	// at the narrowest; the short ones fit in 36.
	t.Run("then short texts", func(t *testing.T) {
		got := tab.Fit(36, "hint")
		lines := renderedLines(t, got)
		if w := widest(lines); w > 36 {
			t.Errorf("rendered %d wide, want at most 36:\n%s", w, strings.Join(lines, "\n"))
		}
		if got.Rows[0][0].Text != "gpipe" {
			t.Errorf("schedule cell: got %q, want the short %q", got.Rows[0][0].Text, "gpipe")
		}
		if got.Rows[0][0].Value != "gpipe" {
			t.Errorf("raw value changed to %v", got.Rows[0][0].Value)
		}
		note := got.Footnotes[len(got.Footnotes)-1]
		if unwrap(note) != "schedule: defaults not shown; hint" {
			t.Errorf("note: got %q", note)
		}
		if !strings.Contains(got.Title, "\n") || unwrap(got.Title) != tab.Title {
			t.Errorf("title not wrapped between words: %q", got.Title)
		}
	})
}

func TestFitLeavesTableAlone(t *testing.T) {
	tab := fitSample()
	if got := tab.Fit(0, "hint"); got != tab {
		t.Error("width 0: got a new table, want the one given")
	}
	bad := &Table{Columns: []Column{{Key: "a"}}, Rows: [][]Cell{{}}}
	if got := bad.Fit(10, "hint"); got != bad {
		t.Error("invalid table: got a new table, want the one given")
	}
	got := tab.Fit(200, "hint")
	if !reflect.DeepEqual(got, tab) {
		t.Errorf("a table that fits: got %+v, want it unchanged", got)
	}
}

func TestWrapText(t *testing.T) {
	tests := []struct {
		name, in string
		width    int
		want     string
	}{
		{name: "fits", in: "a  b c", width: 10, want: "a  b c"},
		{name: "between words", in: "one two three four", width: 9, want: "one two\nthree\nfour"},
		{name: "long word alone", in: "a abcdefghijk b", width: 5, want: "a\nabcdefghijk\nb"},
		{name: "keeps line breaks", in: "one two\nthree four five", width: 10, want: "one two\nthree four\nfive"},
		{name: "counts characters, not bytes", in: "µµµµ µµµµ", width: 9, want: "µµµµ µµµµ"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := wrapText(tc.in, tc.width); got != tc.want {
				t.Errorf("wrapText(%q, %d): got %q, want %q", tc.in, tc.width, got, tc.want)
			}
		})
	}
}

// profilePair is what the default pipecast profile records: resnet50 at
// 32 px and width 0.25, GPipe against coop on two devices, with a long
// CPU name in the title.
func profilePair() ([]profiler.Record, RunsTableOptions) {
	recs := []profiler.Record{
		runsRecord("run-1", "gpipe", "except-last", 0, 2, 4, 40, 21_500_000),
		runsRecord("run-2", "coop", "", 1, 2, 4, 37, 22_900_000),
	}
	recs[1].Summary.MovedBytesPerStep = 1_415_577
	opts := RunsTableOptions{Title: "pipecast profile: 2 runs on build-host-17 (64 cores, AMD EPYC 7B13 64-Core Processor)"}
	return recs, opts
}

func TestRunsTableFitsEightyColumns(t *testing.T) {
	recs, opts := profilePair()
	pred := recs[1]
	pred.Kind, pred.Summary.PredictedRelErr = profiler.KindPredicted, 0.051
	tests := []struct {
		name string
		recs []profiler.Record
		keep []string // headers that must stay at 80 columns
	}{
		{name: "profile", recs: recs, keep: []string{"model", "schedule", "K", "M", "step", "vs gpipe", "peak/device"}},
		{name: "predict", recs: []profiler.Record{recs[0], pred}, keep: []string{"model", "schedule", "K", "M", "step", "vs gpipe", "peak/device"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tab := RunsTable(tc.recs, opts)
			if w := widest(renderedLines(t, tab)); w <= 80 {
				t.Fatalf("the full table is %d wide: nothing to fit", w)
			}
			got := tab.Fit(80, "--wide shows all columns")
			lines := renderedLines(t, got)
			if w := widest(lines); w > 80 {
				t.Errorf("fitted table is %d wide, want at most 80:\n%s", w, strings.Join(lines, "\n"))
			}
			headers := peopleHeaders(got)
			for _, h := range tc.keep {
				if !slices.Contains(headers, h) {
					t.Errorf("column %q folded; left %q", h, headers)
				}
			}
			last := unwrap(got.Footnotes[len(got.Footnotes)-1])
			if !strings.HasPrefix(last, "folded: ") || !strings.Contains(last, "min–max") ||
				!strings.HasSuffix(last, "; --wide shows all columns") {
				t.Errorf("last footnote %q does not name the folded columns and --wide", last)
			}
			if !strings.Contains(last, "schedule: "+scheduleShortNote) {
				t.Errorf("last footnote %q does not say what the schedule labels leave out", last)
			}
		})
	}
}

func TestRunsTableFitGolden(t *testing.T) {
	recs, opts := profilePair()
	var buf bytes.Buffer
	if err := Render(&buf, RunsTable(recs, opts).Fit(80, "--wide shows all columns"), FormatTable); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "fold_runs_80.txt", buf.Bytes())
}
