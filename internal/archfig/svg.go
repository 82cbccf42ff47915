package archfig

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"math"
	"strconv"
)

// palette is the colours of one path, from GitHub's Primer scales: strong
// enough on the white background the figure brings, in light mode and
// dark.
type palette struct {
	stroke, fill, frame, frameFill, label string
}

var palettes = map[Path]palette{
	Shared:   {stroke: "#57606A", fill: "#FFFFFF", frame: "#8C959F", frameFill: "#F6F8FA", label: "#424A53"},
	Measure:  {stroke: "#0969DA", fill: "#DDF4FF", frame: "#54AEFF", frameFill: "#F3FAFF", label: "#0550AE"},
	Forecast: {stroke: "#BC4C00", fill: "#FFF1E5", frame: "#FB8F44", frameFill: "#FFF8F2", label: "#953800"},
}

const (
	textColour = "#1F2328"
	subColour  = "#424A53"
	// Box text: the title's baseline above the middle, the subtitle's
	// below it.
	titleRise = 4
	subDrop   = 12
	// The arrowhead: its length along the line and half its width.
	headLength = 9
	headHalf   = 4.5
)

// SVG renders the figure as a standalone SVG document: a white
// background, then groups, arrows, boxes and labels, in that order so
// that labels lie on top. The output depends on the figure alone.
func (f Figure) SVG() []byte {
	var b bytes.Buffer
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="pipecast-architecture" width="%s" height="%s" viewBox="0 0 %s %s" font-family="sans-serif" font-size="12">`+"\n",
		num(f.W), num(f.H), num(f.W), num(f.H))
	fmt.Fprintf(&b, "<title>%s</title>\n", escape(f.Title))
	b.WriteString(`<rect width="100%" height="100%" fill="#FFFFFF"/>` + "\n")
	writeText(&b, Text{S: f.Title, At: Point{f.W / 2, 28}, Anchor: Middle, Size: titleSize, Bold: true}, textColour)
	for _, g := range f.Groups {
		p := palettes[g.Path]
		fmt.Fprintf(&b, `<rect x="%s" y="%s" width="%s" height="%s" rx="10" fill="%s" stroke="%s" stroke-width="1.2" stroke-dasharray="5 4"/>`+"\n",
			num(g.X), num(g.Y), num(g.W), num(g.H), p.frameFill, p.frame)
		if g.Label.S != "" {
			writeText(&b, g.Label, p.label)
		}
	}
	for _, a := range f.Arrows {
		writeArrow(&b, a)
	}
	for _, x := range f.Boxes {
		p := palettes[x.Path]
		fmt.Fprintf(&b, `<rect x="%s" y="%s" width="%s" height="%s" rx="6" fill="%s" stroke="%s" stroke-width="1.5"/>`+"\n",
			num(x.X), num(x.Y), num(x.W), num(x.H), p.fill, p.stroke)
		for _, t := range x.texts() {
			colour := textColour
			if !t.Bold {
				colour = subColour
			}
			writeText(&b, t, colour)
		}
	}
	for _, a := range f.Arrows {
		writeText(&b, a.Label, palettes[a.Label.Path].label)
	}
	for _, t := range f.Notes {
		writeText(&b, t, palettes[t.Path].label)
	}
	b.WriteString("</svg>\n")
	return b.Bytes()
}

// texts returns the box's title and subtitle, centred.
func (x Box) texts() []Text {
	mid := x.Y + x.H/2
	return []Text{
		{S: x.Title, At: Point{x.X + x.W/2, mid - titleRise}, Anchor: Middle, Size: boxTitle, Bold: true},
		{S: x.Sub, At: Point{x.X + x.W/2, mid + subDrop}, Anchor: Middle, Size: boxSub},
	}
}

// writeArrow draws the polyline, stopped short of its last point by the
// arrowhead, and the arrowhead as a triangle whose tip is the last point.
func writeArrow(b *bytes.Buffer, a Arrow) {
	p := palettes[a.Path]
	pts := a.Points
	n := len(pts)
	tip, from := pts[n-1], pts[n-2]
	dx, dy := tip.X-from.X, tip.Y-from.Y
	l := math.Hypot(dx, dy)
	ux, uy := dx/l, dy/l
	base := Point{tip.X - ux*headLength, tip.Y - uy*headLength}

	var d bytes.Buffer
	for i, q := range pts[:n-1] {
		if i == 0 {
			d.WriteString("M")
		} else {
			d.WriteString(" L")
		}
		fmt.Fprintf(&d, "%s %s", num(q.X), num(q.Y))
	}
	fmt.Fprintf(&d, " L%s %s", num(base.X), num(base.Y))
	dash := ""
	if a.Dashed {
		dash = ` stroke-dasharray="6 4"`
	}
	fmt.Fprintf(b, `<path d="%s" fill="none" stroke="%s" stroke-width="1.6"%s/>`+"\n", d.String(), p.stroke, dash)
	left := Point{base.X - uy*headHalf, base.Y + ux*headHalf}
	right := Point{base.X + uy*headHalf, base.Y - ux*headHalf}
	fmt.Fprintf(b, `<polygon points="%s,%s %s,%s %s,%s" fill="%s"/>`+"\n",
		num(tip.X), num(tip.Y), num(left.X), num(left.Y), num(right.X), num(right.Y), p.stroke)
}

var anchors = map[Anchor]string{Start: "start", Middle: "middle", End: "end"}

func writeText(b *bytes.Buffer, t Text, colour string) {
	weight := ""
	if t.Bold {
		weight = ` font-weight="bold"`
	}
	fmt.Fprintf(b, `<text x="%s" y="%s" text-anchor="%s" font-size="%s"%s fill="%s">%s</text>`+"\n",
		num(t.At.X), num(t.At.Y), anchors[t.Anchor], num(t.Size), weight, colour, escape(t.S))
}

// num writes a coordinate with at most two decimals and no trailing
// zeros, so that the output is the same on every platform.
func num(v float64) string {
	return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64)
}

func escape(s string) string {
	var b bytes.Buffer
	xml.EscapeText(&b, []byte(s)) // writes to a bytes.Buffer, which cannot fail
	return b.String()
}
