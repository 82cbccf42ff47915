package schedule

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
	"testing"
)

// docChart returns the indented block of the doc comment of function fn
// in file, with its indentation removed: the chart the doc shows.
func docChart(t *testing.T, file, fn string) string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Name.Name != fn || fd.Doc == nil {
			continue
		}
		var b strings.Builder
		for line := range strings.Lines(fd.Doc.Text()) {
			if chart, ok := strings.CutPrefix(line, "\t"); ok {
				b.WriteString(chart)
			} else if b.Len() > 0 {
				break // the chart is the first indented block
			}
		}
		return b.String()
	}
	t.Fatalf("%s: no documented func %s", file, fn)
	return ""
}

// TestChartsInDocs regenerates the chart in each schedule's doc comment,
// so that the docs never drift from the programs.
func TestChartsInDocs(t *testing.T) {
	tests := []struct {
		name     string
		file, fn string
		o        Options
	}{
		{"single", "single.go", "single", Options{Name: Single, Devices: 1, Micro: 4}},
		{"gpipe", "gpipe.go", "gpipe", Options{Name: GPipe, Devices: 4, Micro: 4, Checkpoint: ExceptLast}},
		{"1f1b", "onef1b.go", "oneF1B", Options{Name: OneF1B, Devices: 4, Micro: 4}},
		{"coop", "coop.go", "coop", Options{Name: Coop, Devices: 4, Micro: 4, Prefetch: 1}},
		{"interleaved", "interleaved.go", "interleaved", Options{Name: Interleaved, Devices: 4, Micro: 8, Virtual: 2}},
		{"zb-h1", "zerobubble.go", "zbH1", Options{Name: ZBH1, Devices: 4, Micro: 8}},
		{"zb-h2", "zerobubble.go", "zbH2", Options{Name: ZBH2, Devices: 4, Micro: 8}},
		{"zb-v", "vshape.go", "zbV", Options{Name: ZBV, Devices: 4, Micro: 8}},
		{"dualpipev", "vshape.go", "dualPipeV", Options{Name: DualPipeV, Devices: 4, Micro: 8}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Build(tt.o)
			if err != nil {
				t.Fatal(err)
			}
			want, err := Chart(p)
			if err != nil {
				t.Fatal(err)
			}
			if got := docChart(t, tt.file, tt.fn); got != want {
				t.Errorf("the chart in %s's doc comment is stale:\n%s\nwant (indent each line by a tab):\n%s", tt.fn, got, want)
			}
		})
	}
}

func TestRender(t *testing.T) {
	// Device 0: F0.0 [0, 1.5), send [1.5, 2), recv of the gradient
	// [6.75, 7), B0.0 [7, 9). Device 1: recv [2, 2.25), F1.0 [2.25, 3.75),
	// L0 [3.75, 4.25), B1.0 [4.25, 6.25), send [6.25, 6.75). Updates are
	// free; the step is 9 long.
	p, err := Build(Options{Name: GPipe, Devices: 2, Micro: 1, Checkpoint: Never})
	if err != nil {
		t.Fatal(err)
	}
	cost := func(_ int, o Op) float64 {
		switch o.Kind {
		case Forward:
			return 1.5
		case Send:
			return 0.5
		case Recv:
			return 0.25
		case Loss:
			return 0.5
		case Backward:
			return 2
		}
		return 0
	}
	tl, err := Simulate(p, cost)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		tick float64
		want string
	}{
		// Column c shows the op at 0.5·(c+½): 0.25, 0.75, …; device 1's
		// recv lies between two of them.
		{"half ticks", 0.5, "" +
			"tick  0     1     2     3     4     5     6     7     8     9     10    11    12    13    14    15    16    17\n" +
			"dev 0 F0.0  F0.0  F0.0  S0.0  .     .     .     .     .     .     .     .     .     Rv1.0 B0.0  B0.0  B0.0  B0.0\n" +
			"dev 1 .     .     .     .     F1.0  F1.0  F1.0  L0    B1.0  B1.0  B1.0  B1.0  S1.0  .     .     .     .     .\n"},
		// Column c shows the op at c+½: device 0's send covers 1.5 and
		// shows, the loss and both recvs lie between the middles.
		{"unit ticks", 1, "" +
			"tick  0    1    2    3    4    5    6    7    8\n" +
			"dev 0 F0.0 S0.0 .    .    .    .    .    B0.0 B0.0\n" +
			"dev 1 .    .    F1.0 F1.0 B1.0 B1.0 S1.0 .    .\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tl.Render(tt.tick); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestRenderPanicsOnBadTick(t *testing.T) {
	p, err := Build(Options{Name: Single, Devices: 1, Micro: 1})
	if err != nil {
		t.Fatal(err)
	}
	tl, err := Simulate(p, ChartCost)
	if err != nil {
		t.Fatal(err)
	}
	for _, tick := range []float64{0, -1} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Render(%v) does not panic", tick)
				}
			}()
			tl.Render(tick)
		}()
	}
}

func TestChartDeadlock(t *testing.T) {
	p, err := Build(Options{Name: GPipe, Devices: 2, Micro: 1})
	if err != nil {
		t.Fatal(err)
	}
	p.Devices[0] = p.Devices[0][:1] // device 0 never sends
	if _, err := Chart(p); err == nil || !strings.Contains(err.Error(), "chart: simulate: deadlock") {
		t.Errorf("error %v, want a deadlock", err)
	}
}
