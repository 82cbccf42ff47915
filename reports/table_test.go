package reports

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// checkGolden compares got with testdata/name, or rewrites the file under
// -update.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (go test -update rewrites it)\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}

var allFormats = []Format{FormatTable, FormatMarkdown, FormatCSV, FormatJSON}

// extension is the golden file's extension for each format.
var extension = map[Format]string{FormatTable: "txt", FormatMarkdown: "md", FormatCSV: "csv", FormatJSON: "json"}

// sampleTable exercises what the renderers must get right: right-aligned
// numbers, a cell that does not apply, a pipe, a comma and a quote, wide
// and non-ASCII text, columns for one audience only, title and footnotes.
func sampleTable() *Table {
	return &Table{
		Title: "Zoo (at default sizes)",
		Columns: []Column{
			{Key: "model", Header: "model"},
			{Key: "input", Header: "input"},
			{Key: "params", Header: "params", Align: AlignRight},
			{Key: "activation_bytes", Header: "activations/sample", Align: AlignRight},
			{Key: "ratio", Header: "ratio", Align: AlignRight},
			{Key: "exact", Header: "exact", Align: AlignRight},
			{Key: "note", Header: "note", Show: Machines},
			{Key: "span", Header: "span", Show: People},
			{Key: "description", Header: "description", MaxWidth: 18},
		},
		Rows: [][]Cell{
			{String("resnet50"), {Value: "3x224x224", Text: "3×224×224"}, Count(25_557_032), Bytes(110_886_912),
				Float(1.25, 3), Cell{Value: true, Text: "yes"}, {}, String("conv1 … fc"), String("ResNet-50 | torchvision")},
			{{Value: "inceptionv3", Text: "inceptionv3 [1]"}, {Value: "3x64x64", Text: "3×64×64"}, Empty("—"), Empty("—"),
				Empty(""), Cell{Value: false, Text: "no"}, String("needs 75, got 64"), Empty("—"), String(`Inception-v3, "aux" head`)},
			{String("mlp"), {Value: "784", Text: "784"}, Count(1_863_690), Bytes(3136),
				Float(0.5, 3), Int(-7), {}, String("0 … 4"), String("a back-slash \\ and\na line break")},
		},
		Footnotes: []string{
			"[1] inceptionv3 needs an input of at least 75×75.",
			"activations: bytes kept per sample | float32",
		},
	}
}

// plainTable has neither title nor footnotes.
func plainTable() *Table {
	return &Table{
		Columns: []Column{{Key: "stage", Header: "stage", Align: AlignRight}, {Key: "name", Header: "name"}},
		Rows:    [][]Cell{{Int(1), String("a")}, {Int(2), String("bcdef")}},
	}
}

func TestRenderGolden(t *testing.T) {
	tables := []struct {
		name  string
		table *Table
	}{
		{name: "sample", table: sampleTable()},
		{name: "plain", table: plainTable()},
		{name: "empty", table: &Table{Title: "nothing to show", Columns: plainTable().Columns, Footnotes: []string{"no rows"}}},
	}
	for _, tc := range tables {
		for _, f := range allFormats {
			t.Run(tc.name+"/"+string(f), func(t *testing.T) {
				var buf bytes.Buffer
				if err := Render(&buf, tc.table, f); err != nil {
					t.Fatal(err)
				}
				checkGolden(t, tc.name+"."+extension[f], buf.Bytes())
			})
		}
	}
}

func TestRenderTitleAndFootnotesForPeopleOnly(t *testing.T) {
	tab := sampleTable()
	for _, f := range allFormats {
		t.Run(string(f), func(t *testing.T) {
			var buf bytes.Buffer
			if err := Render(&buf, tab, f); err != nil {
				t.Fatal(err)
			}
			out := buf.String()
			forPeople := f == FormatTable || f == FormatMarkdown
			for _, s := range []string{tab.Title, "[1] inceptionv3 needs", "activations/sample", "3×224×224", "25.56 M", "conv1 … fc"} {
				if strings.Contains(out, s) != forPeople {
					t.Errorf("contains %q: got %t, want %t\n%s", s, !forPeople, forPeople, out)
				}
			}
			for _, s := range []string{"activation_bytes", "3x224x224", "25557032", "needs 75, got 64"} {
				if strings.Contains(out, s) == forPeople {
					t.Errorf("contains %q: got %t, want %t\n%s", s, forPeople, !forPeople, out)
				}
			}
		})
	}
}

func TestRenderTableAlignsNumbersRight(t *testing.T) {
	tab := sampleTable()
	var buf bytes.Buffer
	if err := Render(&buf, tab, FormatTable); err != nil {
		t.Fatal(err)
	}
	cols := tab.visible(People)
	var lines int
	for _, l := range strings.Split(buf.String(), "\n") {
		if !strings.HasPrefix(l, "│") {
			continue // borders, title and footnotes
		}
		lines++
		cells := strings.Split(strings.Trim(l, "│"), "│")
		if len(cells) != len(cols) {
			t.Fatalf("line %q has %d cells, want %d", l, len(cells), len(cols))
		}
		for k, i := range cols {
			c := cells[k]
			if strings.TrimSpace(c) == "" {
				continue
			}
			// One space of padding on the side the text is aligned to.
			right := strings.HasSuffix(c, " ") && !strings.HasSuffix(c, "  ")
			left := strings.HasPrefix(c, " ") && !strings.HasPrefix(c, "  ")
			if tab.Columns[i].Align == AlignRight && !right {
				t.Errorf("column %q cell %q is not right-aligned", tab.Columns[i].Key, c)
			}
			if tab.Columns[i].Align == AlignLeft && !left {
				t.Errorf("column %q cell %q is not left-aligned", tab.Columns[i].Key, c)
			}
		}
	}
	// Descriptions wrap at 18 characters: two lines each, the mlp's at
	// its line break.
	if lines != 2*len(tab.Rows)+1 {
		t.Errorf("got %d table lines, want a header and %d rows of two lines:\n%s", lines, len(tab.Rows), buf.String())
	}
	for _, want := range []string{"│ ResNet-50 |        │", "│ torchvision        │", "│ a back-slash \\ and │"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("output lacks %q (description wrapped at 18 characters):\n%s", want, buf.String())
		}
	}
	if strings.Contains(buf.String(), "ACTIVATIONS") {
		t.Errorf("headers were upper-cased:\n%s", buf.String())
	}
}

// splitMarkdownRow splits a pipe-table line into its cells, undoing
// markdownEscape.
func splitMarkdownRow(line string) []string {
	line = strings.TrimSuffix(strings.TrimPrefix(line, "|"), "|")
	var cells []string
	var cur strings.Builder
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '\\' && i+1 < len(line):
			i++
			cur.WriteByte(line[i])
		case line[i] == '|':
			cells = append(cells, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(line[i])
		}
	}
	cells = append(cells, cur.String())
	for i, c := range cells {
		cells[i] = strings.ReplaceAll(strings.TrimSpace(c), "<br>", "\n")
	}
	return cells
}

func TestRenderMarkdownReadsBack(t *testing.T) {
	tab := sampleTable()
	var buf bytes.Buffer
	if err := Render(&buf, tab, FormatMarkdown); err != nil {
		t.Fatal(err)
	}
	var rows [][]string
	for _, l := range strings.Split(buf.String(), "\n") {
		if strings.HasPrefix(l, "|") {
			rows = append(rows, splitMarkdownRow(l))
		}
	}
	cols := tab.visible(People)
	if len(rows) != len(tab.Rows)+2 {
		t.Fatalf("got %d table lines, want %d:\n%s", len(rows), len(tab.Rows)+2, buf.String())
	}
	for k, i := range cols {
		if rows[0][k] != tab.Columns[i].Header {
			t.Errorf("header %d: got %q, want %q", k, rows[0][k], tab.Columns[i].Header)
		}
		delim := rows[1][k]
		if right := strings.HasSuffix(delim, ":"); right != (tab.Columns[i].Align == AlignRight) {
			t.Errorf("column %q delimiter %q: right-aligned %t, want %t", tab.Columns[i].Key, delim, right, !right)
		}
		if strings.HasPrefix(delim, ":") || strings.Trim(delim, "-:") != "" || len(delim) < 3 {
			t.Errorf("column %q delimiter %q is not ---, --:", tab.Columns[i].Key, delim)
		}
	}
	for r, row := range tab.Rows {
		got := rows[r+2]
		if len(got) != len(cols) {
			t.Fatalf("row %d: got %d cells %q, want %d", r, len(got), got, len(cols))
		}
		for k, i := range cols {
			if got[k] != row[i].Text {
				t.Errorf("row %d column %q: got %q, want %q", r, tab.Columns[i].Key, got[k], row[i].Text)
			}
		}
	}
}

func TestRenderCSVReadsBack(t *testing.T) {
	tab := sampleTable()
	var buf bytes.Buffer
	if err := Render(&buf, tab, FormatCSV); err != nil {
		t.Fatal(err)
	}
	records, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatalf("output does not parse as csv: %v", err)
	}
	want := [][]string{
		{"model", "input", "params", "activation_bytes", "ratio", "exact", "note", "description"},
		{"resnet50", "3x224x224", "25557032", "110886912", "1.25", "true", "", "ResNet-50 | torchvision"},
		{"inceptionv3", "3x64x64", "", "", "", "false", "needs 75, got 64", `Inception-v3, "aux" head`},
		{"mlp", "784", "1863690", "3136", "0.5", "-7", "", "a back-slash \\ and\na line break"},
	}
	if !reflect.DeepEqual(records, want) {
		t.Errorf("csv read back:\ngot  %q\nwant %q", records, want)
	}
}

func TestRenderJSONReadsBack(t *testing.T) {
	tab := sampleTable()
	var buf bytes.Buffer
	if err := Render(&buf, tab, FormatJSON); err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(&buf)
	dec.UseNumber()
	var got []map[string]any
	if err := dec.Decode(&got); err != nil {
		t.Fatalf("output does not parse as json: %v", err)
	}
	want := []map[string]any{
		{"model": "resnet50", "input": "3x224x224", "params": json.Number("25557032"), "activation_bytes": json.Number("110886912"),
			"ratio": json.Number("1.25"), "exact": true, "note": nil, "description": "ResNet-50 | torchvision"},
		{"model": "inceptionv3", "input": "3x64x64", "params": nil, "activation_bytes": nil,
			"ratio": nil, "exact": false, "note": "needs 75, got 64", "description": `Inception-v3, "aux" head`},
		{"model": "mlp", "input": "784", "params": json.Number("1863690"), "activation_bytes": json.Number("3136"),
			"ratio": json.Number("0.5"), "exact": json.Number("-7"), "note": nil, "description": "a back-slash \\ and\na line break"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("json read back:\ngot  %v\nwant %v", got, want)
	}
}

func TestObjectKeepsKeyOrder(t *testing.T) {
	obj := Object{{"z", int64(1)}, {"a", "x"}, {"m", nil}, {"nan", math.NaN()}, {"inf", math.Inf(-1)}, {"f", 0.25}}
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), `{"z":1,"a":"x","m":null,"nan":null,"inf":null,"f":0.25}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if _, err := json.Marshal(Object{{"bad", func() {}}}); err == nil {
		t.Error("marshal of a func value: got no error")
	}
}

func TestObjectsOfEmptyTableIsEmptyArray(t *testing.T) {
	tab := &Table{Columns: plainTable().Columns}
	b, err := json.Marshal(tab.Objects())
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != "[]" {
		t.Errorf("got %s, want []", b)
	}
}

func TestRenderErrors(t *testing.T) {
	tests := []struct {
		name   string
		table  *Table
		format Format
		want   string
	}{
		{name: "unknown format", table: plainTable(), format: "xml", want: `unknown format "xml"`},
		{name: "no columns", table: &Table{}, format: FormatCSV, want: "no columns"},
		{name: "short row", table: &Table{Columns: plainTable().Columns, Rows: [][]Cell{{Int(1)}}}, format: FormatTable,
			want: "row 0 has 1 cells for 2 columns"},
		{name: "int is not int64", table: &Table{Columns: plainTable().Columns, Rows: [][]Cell{{{Value: 3, Text: "3"}, String("a")}}},
			format: FormatJSON, want: `row 0 column "stage": value of type int`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			err := Render(&buf, tc.table, tc.format)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got error %v, want one containing %q", err, tc.want)
			}
			if buf.Len() != 0 {
				t.Errorf("wrote %q despite the error", buf.String())
			}
		})
	}
}

// failingWriter fails every write, as a closed pipe would.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("broken pipe") }

func TestRenderReportsWriteErrors(t *testing.T) {
	for _, f := range allFormats {
		t.Run(string(f), func(t *testing.T) {
			err := Render(failingWriter{}, sampleTable(), f)
			if err == nil || !strings.Contains(err.Error(), "broken pipe") || !strings.Contains(err.Error(), "render "+string(f)) {
				t.Errorf("got error %v, want render %s: ... broken pipe", err, f)
			}
		})
	}
}

func TestCellConstructors(t *testing.T) {
	tests := []struct {
		name      string
		cell      Cell
		wantValue any
		wantText  string
	}{
		{name: "Int", cell: Int(-42), wantValue: int64(-42), wantText: "-42"},
		{name: "Count", cell: Count(4_089_184_256), wantValue: int64(4_089_184_256), wantText: "4.09 G"},
		{name: "Bytes", cell: Bytes(3136), wantValue: int64(3136), wantText: "3.06 KiB"},
		{name: "String", cell: String("a|b"), wantValue: "a|b", wantText: "a|b"},
		{name: "Float", cell: Float(1.0/3, 3), wantValue: 1.0 / 3, wantText: "0.333"},
		{name: "Empty", cell: Empty("—"), wantValue: nil, wantText: "—"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.cell.Value != tc.wantValue || tc.cell.Text != tc.wantText {
				t.Errorf("got {%v %q}, want {%v %q}", tc.cell.Value, tc.cell.Text, tc.wantValue, tc.wantText)
			}
		})
	}
	// The csv text of a raw float must parse back to the same value.
	if got, _ := strconv.ParseFloat(rawText(1.0/3), 64); got != 1.0/3 {
		t.Errorf("raw float 1/3 reads back as %v", got)
	}
}
