package archfig

import (
	"bytes"
	"flag"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite docs/img/architecture.svg")

// figurePath is the committed figure, from this package's directory.
const figurePath = "../../docs/img/architecture.svg"

// TestArchitectureSVG compares the committed figure with what
// Architecture renders; -update writes it.
func TestArchitectureSVG(t *testing.T) {
	got := Architecture().SVG()
	if *update {
		if err := os.WriteFile(figurePath, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(figurePath)
	if err != nil {
		t.Fatalf("%v (run scripts/architecture-figure.sh to write it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from what Architecture renders; run scripts/architecture-figure.sh "+
			"(go test ./internal/archfig -run '^TestArchitectureSVG$' -update) and commit the figure", figurePath)
	}
}

func TestArchitectureLayout(t *testing.T) {
	if err := Architecture().Check(); err != nil {
		t.Error(err)
	}
}

// TestCheckBroken breaks the figure on purpose: Check must find each
// defect.
func TestCheckBroken(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Figure)
		want   string
	}{
		{"title too wide", func(f *Figure) { f.Boxes[0].Title += strings.Repeat(" and more", 20) }, "has room for"},
		{"boxes overlap", func(f *Figure) { f.Boxes[1].Rect = f.Boxes[0].Rect }, "overlap"},
		{"box off the canvas", func(f *Figure) { f.Boxes[0].X = f.W - 10 }, "outside the"},
		{"label on a box", func(f *Figure) { f.Arrows[0].Label.At = f.Boxes[0].texts()[0].At }, "on box"},
		{"label on a line", func(f *Figure) { f.Arrows[1].Label.At = f.Arrows[0].Points[0]; f.Arrows[1].Label.At.Y += 10 }, "on a line of arrow"},
		{"labels overlap", func(f *Figure) { f.Notes[1].At = f.Notes[0].At }, "on note"},
		{"label on a frame", func(f *Figure) { f.Groups[0].Label.At.Y = f.Groups[0].Y + 4 }, "on the frame of group"},
		{"arrow through a box", func(f *Figure) {
			a := &f.Arrows[0]
			a.Points = []Point{a.Points[0], {a.Points[0].X, f.Boxes[2].Y + f.Boxes[2].H}}
			a.To = f.Boxes[2].ID
		}, "runs through box"},
		{"arrow off its box", func(f *Figure) { f.Arrows[0].Points[0].X = 5 }, "not on the edge of"},
		{"arrow to nothing", func(f *Figure) { f.Arrows[0].To = "nowhere" }, "names no box"},
		{"arrow without label", func(f *Figure) { f.Arrows[0].Label.S = "" }, "no label"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := Architecture()
			tt.mutate(&f)
			err := f.Check()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Check: got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestTextWidth(t *testing.T) {
	tests := []struct {
		name string
		s    string
		size float64
		bold bool
		want float64
	}{
		// "Hi" in DejaVu Sans: H 752 + i 278 thousandths of an em.
		{"regular", "Hi", 10, false, 10.3},
		{"bold", "Hi", 10, true, 11.8}, // H 837 + i 343
		{"extra character", "·", 10, false, 3.18},
		{"unknown character", "é", 10, false, 10},
		{"empty", "", 12, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Tolerance: float rounding of a sum of integers times size/1000.
			if got := TextWidth(tt.s, tt.size, tt.bold); got < tt.want-1e-9 || got > tt.want+1e-9 {
				t.Errorf("TextWidth(%q, %g, %v): got %v, want %v", tt.s, tt.size, tt.bold, got, tt.want)
			}
		})
	}
}
