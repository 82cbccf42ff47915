package reports

import (
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// The SVG reports come in two kinds, drawn two ways:
//
//   - WriteTimelineSVG draws one step as a Gantt chart. gonum/plot has no
//     Gantt plotter, and its SVG canvas writes anonymous paths, so the
//     timeline is written directly: every op becomes a <g class="op …">
//     holding its rectangle, a <title> tooltip and its micro-batch number,
//     which browsers show on hover and tests can count.
//   - WriteChartSVG draws bars with error bars and axes, which is what
//     gonum/plot is for: it lays out ticks and labels from real font
//     metrics.

// OpColors is the fill of each op kind in SVG timelines: Paul Tol's
// "muted" qualitative scheme (https://personal.sron.nl/~pault/), whose ten
// colours stay distinct under the common forms of colour blindness. Compute
// on the critical path takes the cool colours (forward, recompute,
// backward), transfers the reds and purples, the rest earth tones; idle
// time is left blank. The muted scheme has no more than these ten, so the
// halves of a split backward (zb-h1, zb-h2) take colours of Tol's other
// schemes that none of the ten resembles: the input gradient, on the
// critical path, a blue beside backward's indigo (his "bright" blue), the
// deferred weight gradient an orange (his "vibrant" orange).
var OpColors = map[string]string{
	"forward":         "#88CCEE", // cyan
	"recompute":       "#44AA99", // teal
	"backward":        "#332288", // indigo
	"backward-input":  "#4477AA", // blue (bright scheme)
	"backward-weight": "#EE7733", // orange (vibrant scheme)
	"loss":            "#882255", // wine
	"predict":         "#DDCC77", // sand
	"send":            "#CC6677", // rose
	"recv":            "#AA4499", // purple
	"allgather":       "#999933", // olive
	"alltoall":        "#117733", // green
	"update":          "#DDDDDD", // pale grey
}

// legendOpOrder is the order of op kinds in legends: a step's life from the
// weight sync to the update.
var legendOpOrder = []string{"allgather", "predict", "alltoall", "forward", "recompute", "loss", "backward", "backward-input", "backward-weight",
	"send", "recv", "update"}

// unknownOpColor fills ops of a kind OpColors does not know, so that a
// newer record still renders.
const unknownOpColor = "#FFFFFF"

// svgDarkFills are the fills on which labels are written in white.
var svgDarkFills = map[string]bool{"#332288": true, "#4477AA": true, "#882255": true, "#117733": true, "#AA4499": true}

// svgWriter writes SVG text and keeps the first write error, so drawing
// code stays linear and the error is checked once at the end.
type svgWriter struct {
	w   io.Writer
	err error
}

// printf writes formatted markup; arguments must already be escaped.
func (s *svgWriter) printf(format string, args ...any) {
	if s.err != nil {
		return
	}
	_, s.err = fmt.Fprintf(s.w, format, args...)
}

// text writes a <text> element holding the escaped string str.
func (s *svgWriter) text(x, y float64, attrs, str string) {
	s.printf(`<text x="%s" y="%s"%s>%s</text>`+"\n", svgNum(x), svgNum(y), attrs, svgEscape(str))
}

// svgEscape returns str escaped for XML character data and attribute values.
func svgEscape(str string) string {
	var b strings.Builder
	// xml.EscapeText writes to a strings.Builder, which never fails.
	_ = xml.EscapeText(&b, []byte(str))
	return b.String()
}

// svgNum formats a coordinate with at most two decimals and no trailing
// zeros, so that files are small and byte-for-byte reproducible.
func svgNum(v float64) string {
	s := strconv.FormatFloat(v, 'f', 2, 64)
	s = strings.TrimRight(s, "0")
	s = strings.TrimSuffix(s, ".")
	if s == "-0" {
		s = "0"
	}
	return s
}

// svgMillis formats nanoseconds as milliseconds for labels.
func svgMillis(ns int64) string {
	ms := float64(ns) / 1e6
	switch {
	case ms >= 100:
		return strconv.FormatFloat(ms, 'f', 1, 64) + " ms"
	case ms >= 1:
		return strconv.FormatFloat(ms, 'f', 2, 64) + " ms"
	default:
		return strconv.FormatFloat(ms, 'f', 3, 64) + " ms"
	}
}

// svgNiceStep returns a tick spacing of 1, 2 or 5 × 10ⁿ that divides span
// into at most about target intervals.
func svgNiceStep(span float64, target int) float64 {
	if span <= 0 || target < 1 {
		return 1
	}
	raw := span / float64(target)
	mag := 1.0
	for mag*10 <= raw {
		mag *= 10
	}
	for mag > raw {
		mag /= 10
	}
	for _, f := range []float64{1, 2, 5, 10} {
		if f*mag >= raw {
			return f * mag
		}
	}
	return 10 * mag
}
