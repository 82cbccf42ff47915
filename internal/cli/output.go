package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/pipecast/pipecast/reports"
)

// Format is a way of printing a command's result, chosen with --output.
type Format string

// The output formats. Each command accepts the subset that suits its data.
const (
	FormatText     Format = "text"     // free-form lines for a person
	FormatTable    Format = "table"    // aligned columns for a person
	FormatMarkdown Format = "markdown" // a Markdown table for documents
	FormatCSV      Format = "csv"      // comma-separated values for spreadsheets
	FormatJSON     Format = "json"     // JSON for programs
)

// formatValue is the pflag.Value behind --output. Rejecting a format in
// Set, rather than in the run function, makes a bad value a flag error,
// and so a usage error, before any work starts.
type formatValue struct {
	p       *Format
	allowed []Format
}

func (v *formatValue) String() string { return string(*v.p) }

func (v *formatValue) Set(s string) error {
	for _, f := range v.allowed {
		if string(f) == s {
			*v.p = f
			return nil
		}
	}
	return fmt.Errorf("unknown format %q (want %s)", s, v.choices())
}

func (v *formatValue) Type() string { return "format" }

func (v *formatValue) choices() string {
	names := make([]string, len(v.allowed))
	for i, f := range v.allowed {
		names[i] = string(f)
	}
	return strings.Join(names, "|")
}

// addOutputFlag adds --output to cmd, storing the choice in *p. Only the
// given formats are accepted; the first is the default. Every command that
// prints data adds its output flag through here, so the flag's name, help
// and errors are the same everywhere.
func addOutputFlag(cmd *cobra.Command, p *Format, formats ...Format) {
	if len(formats) == 0 {
		panic("cli: addOutputFlag without formats")
	}
	*p = formats[0]
	v := &formatValue{p: p, allowed: formats}
	cmd.Flags().Var(v, "output", "output format: "+v.choices())
	names := make([]string, len(formats))
	for i, f := range formats {
		names[i] = string(f)
	}
	// The error can only say that the flag does not exist, and we just
	// added it.
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(names, cobra.ShellCompDirectiveNoFileComp))
}

// addTableFlags adds the output flags of a command that prints tables:
// --output with tableFormats, and --wide, stored in *wide.
func addTableFlags(cmd *cobra.Command, p *Format, wide *bool) {
	addOutputFlag(cmd, p, tableFormats...)
	cmd.Flags().BoolVar(wide, "wide", false, "print every column even on a narrow terminal, where tables otherwise "+
		"fold their least telling columns to fit and say which")
}

// wideHint is the footnote's pointer to what a folded table leaves out.
const wideHint = "--wide shows all columns"

// renderTable writes t to w in format f. The table format on a terminal
// is fitted to its width (reports.Table.Fit) unless wide is set; every
// other format, and any output that is not a terminal, is t as it is.
func renderTable(w io.Writer, t *reports.Table, f Format, wide bool) error {
	if f == FormatTable && !wide {
		t = t.Fit(terminalWidth(w), wideHint)
	}
	return reports.Render(w, t, reports.Format(f))
}

// terminalWidth is the width in characters of the terminal w writes to,
// or 0 when w is not a terminal; tests replace it.
var terminalWidth = func(w io.Writer) int {
	f, ok := w.(*os.File)
	if !ok {
		return 0
	}
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil {
		return 0 // not a terminal
	}
	return terminalColumns(os.Getenv("COLUMNS"), int(ws.Col))
}

// terminalColumns is the width of a terminal that reports cols columns:
// the COLUMNS environment variable, env, when it holds a positive
// integer, as many tools honour it; else cols.
func terminalColumns(env string, cols int) int {
	if n, err := strconv.Atoi(strings.TrimSpace(env)); err == nil && n > 0 {
		return n
	}
	return max(cols, 0)
}

// writeJSON prints v as indented JSON followed by a newline.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("write json: %w", err)
	}
	return nil
}
