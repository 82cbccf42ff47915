package cli

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/spf13/cobra"
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
