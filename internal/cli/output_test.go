package cli

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/pipecast/pipecast/reports"
)

func TestAddOutputFlag(t *testing.T) {
	tests := []struct {
		name    string
		formats []Format
		args    []string
		want    Format
		wantErr bool
	}{
		{name: "default is the first format", formats: []Format{FormatText, FormatJSON}, want: FormatText},
		{name: "default of a table command", formats: []Format{FormatTable, FormatMarkdown, FormatCSV, FormatJSON}, want: FormatTable},
		{name: "choose json", formats: []Format{FormatText, FormatJSON}, args: []string{"--output", "json"}, want: FormatJSON},
		{name: "choose csv with equals", formats: []Format{FormatTable, FormatCSV}, args: []string{"--output=csv"}, want: FormatCSV},
		{name: "format of another command", formats: []Format{FormatText, FormatJSON}, args: []string{"--output", "csv"}, wantErr: true},
		{name: "case matters", formats: []Format{FormatText, FormatJSON}, args: []string{"--output", "JSON"}, wantErr: true},
		{name: "empty value", formats: []Format{FormatText, FormatJSON}, args: []string{"--output="}, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got Format
			cmd := &cobra.Command{Use: "x"}
			addOutputFlag(cmd, &got, tc.formats...)
			err := cmd.ParseFlags(tc.args)
			if (err != nil) != tc.wantErr {
				t.Fatalf("ParseFlags(%q): got error %v, want error %t", tc.args, err, tc.wantErr)
			}
			if !tc.wantErr && got != tc.want {
				t.Errorf("format: got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestAddOutputFlagWithoutFormatsPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("addOutputFlag without formats: got no panic")
		}
	}()
	var f Format
	addOutputFlag(&cobra.Command{Use: "x"}, &f)
}

func TestWriteJSON(t *testing.T) {
	var buf bytes.Buffer
	in := map[string]int{"a": 1, "b": 2}
	if err := writeJSON(&buf, in); err != nil {
		t.Fatal(err)
	}
	var out map[string]int
	if err := json.Unmarshal(buf.Bytes(), &out); err != nil {
		t.Fatalf("output does not parse: %v\n%s", err, buf.String())
	}
	if out["a"] != 1 || out["b"] != 2 || len(out) != 2 {
		t.Errorf("round trip: got %v, want %v", out, in)
	}
	if s := buf.String(); s[len(s)-1] != '\n' {
		t.Errorf("output %q does not end in a newline", s)
	}
	if err := writeJSON(&buf, func() {}); err == nil {
		t.Error("writeJSON of a func: got no error")
	}
}

// fakeTerminal makes every writer a terminal width columns wide until
// the test ends.
func fakeTerminal(t *testing.T, width int) {
	t.Helper()
	saved := terminalWidth
	t.Cleanup(func() { terminalWidth = saved })
	terminalWidth = func(io.Writer) int { return width }
}

func TestTerminalColumns(t *testing.T) {
	tests := []struct {
		name string
		env  string
		cols int
		want int
	}{
		{name: "the terminal's", env: "", cols: 120, want: 120},
		{name: "COLUMNS wins", env: "60", cols: 120, want: 60},
		{name: "COLUMNS with spaces", env: " 72 ", cols: 120, want: 72},
		{name: "COLUMNS zero", env: "0", cols: 100, want: 100},
		{name: "COLUMNS negative", env: "-5", cols: 100, want: 100},
		{name: "COLUMNS not a number", env: "wide", cols: 100, want: 100},
		{name: "terminal of unknown size", env: "", cols: 0, want: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := terminalColumns(tc.env, tc.cols); got != tc.want {
				t.Errorf("terminalColumns(%q, %d): got %d, want %d", tc.env, tc.cols, got, tc.want)
			}
		})
	}
}

func TestTerminalWidthOfNonTerminals(t *testing.T) {
	// COLUMNS names the width of a terminal; it makes no pipe or file one.
	t.Setenv("COLUMNS", "50")
	f, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for name, w := range map[string]io.Writer{"buffer": &bytes.Buffer{}, "regular file": f} {
		if got := terminalWidth(w); got != 0 {
			t.Errorf("%s: width %d, want 0 (not a terminal)", name, got)
		}
	}
}

func TestAddTableFlags(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		wantWide bool
		want     Format
	}{
		{args: nil, want: FormatTable},
		{args: []string{"--wide"}, wantWide: true, want: FormatTable},
		{args: []string{"--wide", "--output", "csv"}, wantWide: true, want: FormatCSV},
	} {
		var f Format
		var wide bool
		cmd := &cobra.Command{Use: "x"}
		addTableFlags(cmd, &f, &wide)
		if err := cmd.ParseFlags(tc.args); err != nil {
			t.Fatalf("%q: %v", tc.args, err)
		}
		if wide != tc.wantWide || f != tc.want {
			t.Errorf("%q: got wide %t, format %q; want %t, %q", tc.args, wide, f, tc.wantWide, tc.want)
		}
	}
}

func TestRenderTableFitsOnlyTheTableFormatOnATerminal(t *testing.T) {
	tab := &reports.Table{
		Columns: []reports.Column{
			{Key: "name", Header: "name"},
			{Key: "detail", Header: "a rather wide detail", Fold: 1},
		},
		Rows: [][]reports.Cell{{reports.String("x"), reports.String("y")}},
	}
	render := func(f Format, wide bool) string {
		var buf bytes.Buffer
		if err := renderTable(&buf, tab, f, wide); err != nil {
			t.Fatal(err)
		}
		return buf.String()
	}
	plain := map[Format]string{}
	for _, f := range tableFormats {
		plain[f] = render(f, false)
	}
	if !strings.Contains(plain[FormatTable], "a rather wide detail") {
		t.Fatalf("off a terminal the table folded:\n%s", plain[FormatTable])
	}
	fakeTerminal(t, 20)
	folded := render(FormatTable, false)
	if strings.Contains(folded, "│ a rather") ||
		!strings.Contains(strings.ReplaceAll(folded, "\n", " "), "folded: a rather wide detail; --wide shows all columns") {
		t.Errorf("on a 20-column terminal: got\n%s\nwant the detail folded and a footnote on --wide", folded)
	}
	if got := render(FormatTable, true); got != plain[FormatTable] {
		t.Errorf("--wide: got\n%s\nwant\n%s", got, plain[FormatTable])
	}
	for _, f := range []Format{FormatMarkdown, FormatCSV, FormatJSON} {
		if got := render(f, false); got != plain[f] {
			t.Errorf("%s on a terminal: got\n%s\nwant it as off one:\n%s", f, got, plain[f])
		}
	}
}
