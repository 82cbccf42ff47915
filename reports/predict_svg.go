package reports

import (
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// PredictionSeries is one set of runs drawn by WritePredictionSVG: each
// run's measured and forecast step time in nanoseconds.
type PredictionSeries struct {
	// Label names the series in the legend; a schedule's name colours it
	// from ScheduleColors.
	Label     string
	Measured  []float64
	Predicted []float64
	// Hollow draws rings instead of discs, for a series that should not
	// hide the others, such as a baseline.
	Hollow bool
}

// errNoPredictionPoints is returned for a plot with nothing to draw.
var errNoPredictionPoints = errors.New("reports: prediction plot: no runs")

// predictionSize is the side of the square plot: equal axes keep y = x
// at 45°, so that distance from it reads the same everywhere.
const predictionSize = 6 * vg.Inch

// WritePredictionSVG writes an SVG scatter plot of forecast against
// measured step time in milliseconds, one colour per series, with the
// line y = x on which a perfect forecast lies. Both axes span the same
// range. It returns an error when no series holds a point or a series'
// slices differ in length.
func WritePredictionSVG(w io.Writer, title string, series []PredictionSeries) error {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range series {
		if len(s.Measured) != len(s.Predicted) {
			return fmt.Errorf("reports: prediction plot: series %q has %d measured and %d predicted times", s.Label, len(s.Measured), len(s.Predicted))
		}
		for i := range s.Measured {
			for _, v := range []float64{s.Measured[i], s.Predicted[i]} {
				lo, hi = min(lo, v/1e6), max(hi, v/1e6)
			}
		}
	}
	if math.IsInf(lo, 1) {
		return errNoPredictionPoints
	}
	pad := 0.05 * (hi - lo)
	if pad == 0 {
		pad = 0.05 * math.Max(math.Abs(hi), 1)
	}
	lo, hi = math.Max(0, lo-pad), hi+pad

	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "measured step time (ms)"
	p.Y.Label.Text = "predicted step time (ms)"
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = lo, hi, lo, hi
	p.Add(plotter.NewGrid())
	ideal := plotter.NewFunction(func(x float64) float64 { return x })
	ideal.Color = color.Gray{Y: 0x60}
	ideal.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(ideal)
	p.Legend.Add("y = x", ideal)
	p.Legend.Top, p.Legend.Left = true, true
	extra := 0
	for _, s := range series {
		if len(s.Measured) == 0 {
			continue
		}
		xys := make(plotter.XYs, len(s.Measured))
		for i := range s.Measured {
			xys[i] = plotter.XY{X: s.Measured[i] / 1e6, Y: s.Predicted[i] / 1e6}
		}
		sc, err := plotter.NewScatter(xys)
		if err != nil {
			return fmt.Errorf("reports: prediction plot: series %q: %w", s.Label, err)
		}
		c, ok := ScheduleColors[s.Label]
		if !ok {
			c = extraScheduleColors[extra%len(extraScheduleColors)]
			extra++
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: c, Radius: vg.Points(3.5), Shape: draw.CircleGlyph{}}
		if s.Hollow {
			sc.GlyphStyle.Shape = draw.RingGlyph{}
		}
		p.Add(sc)
		p.Legend.Add(s.Label, sc)
	}
	c := vgsvg.New(predictionSize, predictionSize)
	p.Draw(draw.New(c))
	if _, err := c.WriteTo(w); err != nil {
		return fmt.Errorf("reports: write prediction plot: %w", err)
	}
	return nil
}
