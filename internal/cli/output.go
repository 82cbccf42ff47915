package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
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

// writeJSON prints v as indented JSON followed by a newline.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("write json: %w", err)
	}
	return nil
}
