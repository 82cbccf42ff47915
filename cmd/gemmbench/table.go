package main

import (
	"fmt"
	"io"
	"strings"
)

// table prints rows as aligned text or markdown, after the last row.
type table struct {
	out      io.Writer
	markdown bool
	sides    []side
	rows     [][]string
}

func newTable(out io.Writer, markdown bool, sides []side) *table {
	head := []string{"workload", "product (M×N×K op)", "count", "share", sides[0].name + " GFLOP/s"}
	if len(sides) > 1 {
		head = append(head, sides[1].name+" GFLOP/s", "ratio")
	}
	return &table{out: out, markdown: markdown, sides: sides, rows: [][]string{head}}
}

// row adds a line: flops floating-point operations took tm[i] seconds on
// side i.
func (t *table) row(name, prod, count, share string, flops float64, tm timing) {
	r := []string{name, prod, count, share, fmt.Sprintf("%.1f", flops/tm[0]/1e9)}
	if len(tm) > 1 {
		r = append(r, fmt.Sprintf("%.1f", flops/tm[1]/1e9), fmt.Sprintf("%.2f", tm[1]/tm[0]))
	}
	t.rows = append(t.rows, r)
}

func (t *table) flush() {
	widths := make([]int, len(t.rows[0]))
	for _, r := range t.rows {
		for i, c := range r {
			widths[i] = max(widths[i], len([]rune(c)))
		}
	}
	numeric := func(i int) bool { return i >= 2 }
	for ri, r := range t.rows {
		var b strings.Builder
		for i, c := range r {
			pad := strings.Repeat(" ", widths[i]-len([]rune(c)))
			if t.markdown {
				b.WriteString("| ")
			} else if i > 0 {
				b.WriteString("  ")
			}
			if numeric(i) && ri > 0 {
				b.WriteString(pad + c)
			} else {
				b.WriteString(c + pad)
			}
			if t.markdown {
				b.WriteString(" ")
			}
		}
		if t.markdown {
			b.WriteString("|")
		}
		fmt.Fprintln(t.out, strings.TrimRight(b.String(), " "))
		if ri == 0 && t.markdown {
			b.Reset()
			for i, w := range widths {
				dash := strings.Repeat("-", max(w, 3))
				if numeric(i) {
					dash = dash[1:] + ":"
				}
				b.WriteString("| " + dash + " ")
			}
			fmt.Fprintln(t.out, b.String()+"|")
		}
	}
}
