package reports

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"
)

// Format is a way of rendering a Table.
type Format string

// The formats Render writes.
const (
	// FormatTable is an aligned, boxed table for a terminal.
	FormatTable Format = "table"
	// FormatMarkdown is a GitHub pipe table.
	FormatMarkdown Format = "markdown"
	// FormatCSV is comma-separated raw values under a header of column
	// keys, for spreadsheets.
	FormatCSV Format = "csv"
	// FormatJSON is an array of objects keyed by column key, holding raw
	// values.
	FormatJSON Format = "json"
)

// Align is where a column's text sits in its cells.
type Align int

// The alignments. Numbers are right-aligned so that their digits line up.
const (
	AlignLeft Align = iota
	AlignRight
)

// Audience says which formats show a column.
type Audience int

// The audiences of a column.
const (
	// Everyone: every format shows the column.
	Everyone Audience = iota
	// People: only table and markdown show the column, e.g. a block
	// range that machines get as separate first and last columns.
	People
	// Machines: only csv and json show the column, e.g. notes that people
	// read as footnotes.
	Machines
)

// Column is one column of a Table.
type Column struct {
	// Key names the column in machine formats: the csv header and the
	// json object keys ("params", "macs_per_sample").
	Key string
	// Header is the column's title for people ("params", "MACs/sample").
	Header string
	Align  Align
	Show   Audience
	// MaxWidth, when positive, makes the table format wrap the column's
	// text between words to lines of at most MaxWidth characters, so
	// that a long description does not widen the table past a terminal.
	// Markdown never wraps: its renderer wraps for the reader. A table
	// fitted to a narrow terminal (Fit) may wrap it narrower still.
	MaxWidth int
	// Fold ranks the column for Fit, which drops columns from a table
	// too wide for its terminal: 0 never folds, and of the others the
	// highest folds first.
	Fold int
	// ShortNote says what the Short texts of the column's cells leave
	// out ("gpipe's except-last and coop's d=1 not shown"); a fitted
	// table that uses them says so in its footnote.
	ShortNote string
}

// Cell is one value of a Table: the raw value that machine formats carry
// and the text that people see.
type Cell struct {
	// Value is an int64, float64, string, bool, or nil where the column
	// does not apply to the row (empty in csv, null in json).
	Value any
	// Text is what table and markdown show, e.g. "25.56 M" for 25557032.
	Text string
	// Short, when not empty, is what a table fitted to a narrow terminal
	// (Fit) shows instead of Text: "gpipe" for "gpipe (except-last)".
	Short string
}

// Table is data to render: columns, rows of cells, and for people an
// optional title and footnotes.
type Table struct {
	// Title is printed above the table in table and markdown formats.
	Title   string
	Columns []Column
	// Rows hold one cell per column, in column order.
	Rows [][]Cell
	// Footnotes are printed below the table in table and markdown
	// formats, one per line; csv and json omit them.
	Footnotes []string
}

// Int returns a cell holding n, shown in decimal.
func Int(n int64) Cell { return Cell{Value: n, Text: strconv.FormatInt(n, 10)} }

// Count returns a cell holding n, shown with an SI prefix (FormatCount).
func Count(n int64) Cell { return Cell{Value: n, Text: FormatCount(n)} }

// Bytes returns a cell holding n bytes, shown in binary units
// (FormatBytes).
func Bytes(n int64) Cell { return Cell{Value: n, Text: FormatBytes(n)} }

// String returns a cell holding s, shown as it is.
func String(s string) Cell { return Cell{Value: s, Text: s} }

// Float returns a cell holding v, shown with the given decimals.
func Float(v float64, decimals int) Cell {
	return Cell{Value: v, Text: strconv.FormatFloat(v, 'f', decimals, 64)}
}

// Empty returns a cell whose column does not apply to its row, showing
// text to people.
func Empty(text string) Cell { return Cell{Text: text} }

// Render writes t to w in the given format.
func Render(w io.Writer, t *Table, f Format) error {
	if err := t.check(); err != nil {
		return err
	}
	var err error
	switch f {
	case FormatTable:
		err = renderTable(w, t)
	case FormatMarkdown:
		err = renderMarkdown(w, t)
	case FormatCSV:
		err = renderCSV(w, t)
	case FormatJSON:
		err = renderJSON(w, t)
	default:
		return fmt.Errorf("reports: unknown format %q", f)
	}
	if err != nil {
		return fmt.Errorf("render %s: %w", f, err)
	}
	return nil
}

// check reports a row of the wrong length or a value of a type the
// machine formats cannot carry.
func (t *Table) check() error {
	if len(t.Columns) == 0 {
		return fmt.Errorf("reports: table has no columns")
	}
	for i, row := range t.Rows {
		if len(row) != len(t.Columns) {
			return fmt.Errorf("reports: row %d has %d cells for %d columns", i, len(row), len(t.Columns))
		}
		for j, c := range row {
			switch c.Value.(type) {
			case nil, int64, float64, string, bool:
			default:
				return fmt.Errorf("reports: row %d column %q: value of type %T (want int64, float64, string, bool or nil)",
					i, t.Columns[j].Key, c.Value)
			}
		}
	}
	return nil
}

// visible returns the indices of the columns that audience a sees.
func (t *Table) visible(a Audience) []int {
	var idx []int
	for i, c := range t.Columns {
		if c.Show == Everyone || c.Show == a {
			idx = append(idx, i)
		}
	}
	return idx
}

func renderTable(w io.Writer, t *Table) error {
	cols := t.visible(People)
	headers := make([]any, len(cols))
	aligns := make([]tw.Align, len(cols))
	for k, i := range cols {
		headers[k] = t.Columns[i].Header
		aligns[k] = tw.AlignLeft
		if t.Columns[i].Align == AlignRight {
			aligns[k] = tw.AlignRight
		}
	}
	// tablewriter writes as it renders; buffer it so that a failed render
	// writes nothing.
	var buf bytes.Buffer
	if t.Title != "" {
		fmt.Fprintln(&buf, t.Title)
	}
	tab := tablewriter.NewTable(&buf,
		// Headers are printed as given: "MACs/sample", not "MACS/SAMPLE".
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithHeaderAlignmentConfig(tw.CellAlignment{Global: tw.AlignLeft, PerColumn: aligns}),
		tablewriter.WithRowAlignmentConfig(tw.CellAlignment{Global: tw.AlignLeft, PerColumn: aligns}),
		tablewriter.WithRowAutoWrap(tw.WrapNormal),
	)
	tab.Configure(func(cfg *tablewriter.Config) {
		widths := tw.Mapper[int, int]{}
		for k, i := range cols {
			// tablewriter's limit counts the cell's padding, a space
			// either side.
			if w := t.Columns[i].MaxWidth; w > 0 {
				widths[k] = w + 2
			}
		}
		cfg.Row.ColMaxWidths.PerColumn = widths
	})
	tab.Header(headers...)
	for _, row := range t.Rows {
		cells := make([]string, len(cols))
		for k, i := range cols {
			cells[k] = row[i].Text
		}
		if err := tab.Append(cells); err != nil {
			return err
		}
	}
	if err := tab.Render(); err != nil {
		return err
	}
	for _, f := range t.Footnotes {
		fmt.Fprintln(&buf, f)
	}
	_, err := buf.WriteTo(w)
	return err
}

// renderMarkdown writes a GitHub-flavoured pipe table, padded so that the
// source lines up too, with the title as a paragraph above it and each
// footnote as a paragraph below.
func renderMarkdown(w io.Writer, t *Table) error {
	cols := t.visible(People)
	cells := make([][]string, len(t.Rows)+1)
	cells[0] = make([]string, len(cols))
	for k, i := range cols {
		cells[0][k] = markdownEscape(t.Columns[i].Header)
	}
	for r, row := range t.Rows {
		cells[r+1] = make([]string, len(cols))
		for k, i := range cols {
			cells[r+1][k] = markdownEscape(row[i].Text)
		}
	}
	// The delimiter row needs three characters: "---", "--:".
	width := make([]int, len(cols))
	for k := range width {
		width[k] = 3
		for _, line := range cells {
			width[k] = max(width[k], runeWidth(line[k]))
		}
	}
	var b strings.Builder
	if t.Title != "" {
		b.WriteString(markdownEscape(t.Title) + "\n\n")
	}
	writeLine := func(line []string) {
		b.WriteString("|")
		for k, s := range line {
			pad := strings.Repeat(" ", width[k]-runeWidth(s))
			if t.Columns[cols[k]].Align == AlignRight {
				b.WriteString(" " + pad + s + " |")
			} else {
				b.WriteString(" " + s + pad + " |")
			}
		}
		b.WriteString("\n")
	}
	writeLine(cells[0])
	b.WriteString("|")
	for k, i := range cols {
		if t.Columns[i].Align == AlignRight {
			b.WriteString(" " + strings.Repeat("-", width[k]-1) + ": |")
		} else {
			b.WriteString(" " + strings.Repeat("-", width[k]) + " |")
		}
	}
	b.WriteString("\n")
	for _, line := range cells[1:] {
		writeLine(line)
	}
	for _, f := range t.Footnotes {
		b.WriteString("\n" + markdownEscape(f) + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// markdownEscape makes s safe inside a pipe table cell: a pipe would end
// the cell and a newline the row.
func markdownEscape(s string) string {
	s = strings.ReplaceAll(s, `\`, `\\`)
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "\n", "<br>")
}

// runeWidth is the number of characters in s; the tables hold no wide
// (East Asian) characters, so this is the width a monospace font gives.
func runeWidth(s string) int { return len([]rune(s)) }
