package reports

import (
	"bytes"
	"cmp"
	"slices"
	"strings"
)

// minWrapWidth is the narrowest Fit wraps a column that has a MaxWidth:
// narrower, a description reads a word a line.
const minWrapWidth = 20

// Fit returns t as the table format should print it on a terminal width
// characters wide, so that no line wraps. A table that fits is returned
// with only its title and footnotes wrapped between words at width. One
// that does not fits in steps, rendering after each to measure:
//
//  1. its wrapping columns (MaxWidth) wrap narrower, down to minWrapWidth;
//  2. its cells show their Short text instead of Text;
//  3. its columns fold (are left out) one by one, highest Fold first and,
//     among equal ranks, the rightmost first, until it fits; a column of
//     Fold 0 never folds, nor does the last column people see. Then each
//     folded column that fits again comes back, the most telling first.
//
// A fitted table ends with a footnote naming what was folded and what the
// short texts leave out, followed by hint ("--wide shows all columns").
// When nothing makes it fit, the narrowest table steps 2 and 3 reach is
// returned. The result is for the table format: markdown would show its
// wrapped notes as line breaks, and csv and json lack the folded columns.
// Fit leaves t as it is; width 0 or less, or a table that Render would
// reject, returns t itself.
func (t *Table) Fit(width int, hint string) *Table {
	if width <= 0 || t.check() != nil {
		return t
	}
	fitted := t.fitted(nil, false)
	if fitted.fitColumns(width) {
		return t.withNotes(fitted, width, "")
	}
	order := t.foldOrder()
	n := 0
	for ; n <= len(order); n++ {
		fitted = t.fitted(order[:n], true)
		if fitted.fitColumns(width) {
			break
		}
	}
	if n <= len(order) {
		fitted = t.unfold(order[:n], width)
	}
	return t.withNotes(fitted, width, t.fitNote(fitted, hint))
}

// unfold returns t fitted with the columns fold left out, less those of
// them that fit again, the last to fold (the most telling) tried first:
// folding the next column in order may leave room for a narrower one
// folded before it.
func (t *Table) unfold(fold []int, width int) *Table {
	fold = slices.Clone(fold)
	for k := len(fold) - 2; k >= 0; k-- {
		try := slices.Delete(slices.Clone(fold), k, k+1)
		if t.fitted(try, true).fitColumns(width) {
			fold = try
		}
	}
	fitted := t.fitted(fold, true)
	fitted.fitColumns(width)
	return fitted
}

// foldOrder returns the indices of the columns that may fold, in the
// order they fold: highest Fold first, then the rightmost first. The
// last column people see never folds.
func (t *Table) foldOrder() []int {
	var order []int
	for _, i := range t.visible(People) {
		if t.Columns[i].Fold > 0 {
			order = append(order, i)
		}
	}
	slices.SortStableFunc(order, func(a, b int) int {
		if c := cmp.Compare(t.Columns[b].Fold, t.Columns[a].Fold); c != 0 {
			return c
		}
		return cmp.Compare(b, a)
	})
	if len(order) == len(t.visible(People)) {
		order = order[:len(order)-1]
	}
	return order
}

// fitted returns a copy of t without the columns fold and its title and
// footnotes; with short, its cells show their Short texts.
func (t *Table) fitted(fold []int, short bool) *Table {
	out := &Table{}
	keep := make([]int, 0, len(t.Columns))
	for i, c := range t.Columns {
		if !slices.Contains(fold, i) {
			keep = append(keep, i)
			out.Columns = append(out.Columns, c)
		}
	}
	for _, row := range t.Rows {
		cells := make([]Cell, len(keep))
		for k, i := range keep {
			cells[k] = row[i]
			if short && row[i].Short != "" {
				cells[k].Text = row[i].Short
			}
		}
		out.Rows = append(out.Rows, cells)
	}
	return out
}

// fitColumns narrows t's wrapping columns, the widest first, until t
// renders at most width characters wide or none can narrow further, and
// reports whether it fits.
func (t *Table) fitColumns(width int) bool {
	for {
		w, ok := t.renderedWidth()
		if !ok {
			return false
		}
		if w <= width {
			return true
		}
		k := -1
		for _, i := range t.visible(People) {
			c := t.Columns[i]
			if c.MaxWidth > minWrapWidth && (k < 0 || c.MaxWidth > t.Columns[k].MaxWidth) {
				k = i
			}
		}
		if k < 0 {
			return false
		}
		// Each pass narrows by at least one character, so this ends.
		t.Columns[k].MaxWidth = max(minWrapWidth, t.Columns[k].MaxWidth-(w-width))
	}
}

// renderedWidth is the width of t's longest line in the table format,
// and false if it does not render.
func (t *Table) renderedWidth() (int, bool) {
	var buf bytes.Buffer
	if err := renderTable(&buf, t); err != nil {
		return 0, false
	}
	w := 0
	for line := range strings.SplitSeq(buf.String(), "\n") {
		w = max(w, runeWidth(line))
	}
	return w, true
}

// fitNote names what fitted leaves out of t: the folded columns and the
// columns whose cells show short texts, then hint; "" when nothing is
// left out.
func (t *Table) fitNote(fitted *Table, hint string) string {
	var folded, shortened []string
	for _, i := range t.visible(People) {
		c := t.Columns[i]
		if !slices.ContainsFunc(fitted.Columns, func(f Column) bool { return f.Key == c.Key }) {
			folded = append(folded, c.Header)
			continue
		}
		if t.hasShortText(i) {
			s := c.Header + " shortened"
			if c.ShortNote != "" {
				s = c.Header + ": " + c.ShortNote
			}
			shortened = append(shortened, s)
		}
	}
	var parts []string
	if len(folded) > 0 {
		parts = append(parts, "folded: "+strings.Join(folded, ", "))
	}
	parts = append(parts, shortened...)
	if len(parts) == 0 {
		return ""
	}
	if hint != "" {
		parts = append(parts, hint)
	}
	return strings.Join(parts, "; ")
}

// hasShortText reports whether a cell of column i shows a Short text
// that differs from its Text.
func (t *Table) hasShortText(i int) bool {
	return slices.ContainsFunc(t.Rows, func(row []Cell) bool { return row[i].Short != "" && row[i].Short != row[i].Text })
}

// withNotes returns fitted with t's title and footnotes, each wrapped
// at width, and note, when not empty, as the last footnote.
func (t *Table) withNotes(fitted *Table, width int, note string) *Table {
	fitted.Title = wrapText(t.Title, width)
	fitted.Footnotes = nil
	for _, f := range t.Footnotes {
		fitted.Footnotes = append(fitted.Footnotes, wrapText(f, width))
	}
	if note != "" {
		fitted.Footnotes = append(fitted.Footnotes, wrapText(note, width))
	}
	return fitted
}

// wrapText breaks s between words into lines of at most width
// characters, joined by newlines; a word longer than width has a line of
// its own. Line breaks in s are kept, and so is a line that fits.
func wrapText(s string, width int) string {
	var lines []string
	for para := range strings.SplitSeq(s, "\n") {
		if runeWidth(para) <= width {
			lines = append(lines, para)
			continue
		}
		line := ""
		for _, word := range strings.Fields(para) {
			switch {
			case line == "":
				line = word
			case runeWidth(line)+1+runeWidth(word) <= width:
				line += " " + word
			default:
				lines = append(lines, line)
				line = word
			}
		}
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n")
}
