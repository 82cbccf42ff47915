package archfig

import (
	"errors"
	"fmt"
	"math"
)

const (
	// textPad is the least room between a box's text and its sides.
	textPad = 8
	// clearance is the least room between a label and a line, a box or
	// another label, and between two boxes.
	clearance = 2
	// ascent and descent bound a line of text above and below its
	// baseline, in ems: DejaVu Sans's ascender and descender.
	ascent  = 0.93
	descent = 0.24
	// onEdge is how far an arrow's end may lie from its box's edge.
	onEdge = 0.5
)

// Check reports every defect of the layout: text wider than its box, an
// element outside the canvas, boxes that overlap, a box or a label
// across a group's frame, a label on a box, a line or another label, an
// arrow through a box or not starting and ending on the edges of the
// boxes it names.
func (f Figure) Check() error {
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	canvas := Rect{0, 0, f.W, f.H}

	rects := map[string]Rect{}
	for _, g := range f.Groups {
		rects[g.ID] = g.Rect
		if !inside(g.Rect, canvas, 0) {
			fail("group %s: %v outside the %gx%g canvas", g.ID, g.Rect, f.W, f.H)
		}
	}
	for i, x := range f.Boxes {
		if _, dup := rects[x.ID]; dup {
			fail("box %s: ID used twice", x.ID)
		}
		rects[x.ID] = x.Rect
		if !inside(x.Rect, canvas, 0) {
			fail("box %s: %v outside the %gx%g canvas", x.ID, x.Rect, f.W, f.H)
		}
		for _, t := range x.texts() {
			if w, room := TextWidth(t.S, t.Size, t.Bold), x.W-2*textPad; w > room {
				fail("box %s: %q is %.1f px wide, the box has room for %.1f", x.ID, t.S, w, room)
			}
		}
		for _, y := range f.Boxes[:i] {
			if overlaps(x.Rect, y.Rect, clearance) {
				fail("boxes %s and %s overlap", y.ID, x.ID)
			}
		}
		for _, g := range f.Groups {
			if !inside(x.Rect, g.Rect, clearance) && overlaps(x.Rect, g.Rect, clearance) {
				fail("box %s crosses the frame of group %s", x.ID, g.ID)
			}
		}
	}

	type segment struct {
		a, b  Point
		arrow int
	}
	var segments []segment
	for i, a := range f.Arrows {
		name := fmt.Sprintf("arrow %s → %s", a.From, a.To)
		if len(a.Points) < 2 {
			fail("%s: %d points, want at least 2", name, len(a.Points))
			continue
		}
		from, okFrom := rects[a.From]
		to, okTo := rects[a.To]
		if !okFrom || !okTo {
			fail("%s: names no box or group", name)
			continue
		}
		if first := a.Points[0]; !onBorder(first, from) {
			fail("%s: starts at %v, not on the edge of %s", name, first, a.From)
		}
		if last := a.Points[len(a.Points)-1]; !onBorder(last, to) {
			fail("%s: ends at %v, not on the edge of %s", name, last, a.To)
		}
		for j := 1; j < len(a.Points); j++ {
			p, q := a.Points[j-1], a.Points[j]
			if p == q {
				fail("%s: segment %d has no length", name, j)
			}
			if !inside(Rect{math.Min(p.X, q.X), math.Min(p.Y, q.Y), math.Abs(q.X - p.X), math.Abs(q.Y - p.Y)}, canvas, 0) {
				fail("%s: segment %d leaves the canvas", name, j)
			}
			for _, x := range f.Boxes {
				if crosses(p, q, grow(x.Rect, -1)) {
					fail("%s: segment %d runs through box %s", name, j, x.ID)
				}
			}
			segments = append(segments, segment{p, q, i})
		}
	}

	// Every free text: the title, group labels, arrow labels, notes.
	type label struct {
		name string
		text Text
	}
	labels := []label{{"title", Text{S: f.Title, At: Point{f.W / 2, 28}, Anchor: Middle, Size: titleSize, Bold: true}}}
	for _, g := range f.Groups {
		if g.Label.S != "" {
			labels = append(labels, label{"label of group " + g.ID, g.Label})
		}
	}
	for _, a := range f.Arrows {
		if a.Label.S == "" {
			fail("arrow %s → %s: no label", a.From, a.To)
			continue
		}
		labels = append(labels, label{fmt.Sprintf("label %q of arrow %s → %s", a.Label.S, a.From, a.To), a.Label})
	}
	for _, t := range f.Notes {
		labels = append(labels, label{fmt.Sprintf("note %q", t.S), t})
	}
	for i, l := range labels {
		r := textRect(l.text)
		if !inside(r, canvas, 0) {
			fail("%s: outside the canvas", l.name)
		}
		for _, x := range f.Boxes {
			if overlaps(r, x.Rect, clearance) {
				fail("%s: on box %s", l.name, x.ID)
			}
		}
		for _, g := range f.Groups {
			if !inside(r, g.Rect, clearance) && overlaps(r, g.Rect, clearance) {
				fail("%s: on the frame of group %s", l.name, g.ID)
			}
		}
		for _, s := range segments {
			if crosses(s.a, s.b, grow(r, clearance)) {
				fail("%s: on a line of arrow %s → %s", l.name, f.Arrows[s.arrow].From, f.Arrows[s.arrow].To)
			}
		}
		for _, m := range labels[:i] {
			if overlaps(r, textRect(m.text), clearance) {
				fail("%s: on %s", l.name, m.name)
			}
		}
	}
	return errors.Join(errs...)
}

// textRect bounds a line of text.
func textRect(t Text) Rect {
	w := TextWidth(t.S, t.Size, t.Bold)
	x := t.At.X
	switch t.Anchor {
	case Middle:
		x -= w / 2
	case End:
		x -= w
	}
	return Rect{x, t.At.Y - ascent*t.Size, w, (ascent + descent) * t.Size}
}

func grow(r Rect, by float64) Rect {
	return Rect{r.X - by, r.Y - by, r.W + 2*by, r.H + 2*by}
}

// overlaps reports whether r and s come closer than gap.
func overlaps(r, s Rect, gap float64) bool {
	return r.X < s.X+s.W+gap && s.X < r.X+r.W+gap && r.Y < s.Y+s.H+gap && s.Y < r.Y+r.H+gap
}

// inside reports whether r lies within outer, at least margin from its
// sides.
func inside(r, outer Rect, margin float64) bool {
	return r.X >= outer.X+margin && r.Y >= outer.Y+margin &&
		r.X+r.W <= outer.X+outer.W-margin && r.Y+r.H <= outer.Y+outer.H-margin
}

func onBorder(p Point, r Rect) bool {
	within := p.X >= r.X-onEdge && p.X <= r.X+r.W+onEdge && p.Y >= r.Y-onEdge && p.Y <= r.Y+r.H+onEdge
	near := math.Abs(p.X-r.X) <= onEdge || math.Abs(p.X-r.X-r.W) <= onEdge ||
		math.Abs(p.Y-r.Y) <= onEdge || math.Abs(p.Y-r.Y-r.H) <= onEdge
	return within && near
}

// crosses reports whether any part of the segment pq lies in r, by
// Liang and Barsky's clipping ("A new concept and method for line
// clipping", ACM Transactions on Graphics 3(1), 1984).
func crosses(p, q Point, r Rect) bool {
	t0, t1 := 0.0, 1.0
	dx, dy := q.X-p.X, q.Y-p.Y
	for _, c := range [4][2]float64{
		{-dx, p.X - r.X}, {dx, r.X + r.W - p.X},
		{-dy, p.Y - r.Y}, {dy, r.Y + r.H - p.Y},
	} {
		den, num := c[0], c[1]
		if den == 0 {
			if num < 0 {
				return false
			}
			continue
		}
		t := num / den
		if den < 0 {
			t0 = math.Max(t0, t)
		} else {
			t1 = math.Min(t1, t)
		}
		if t0 > t1 {
			return false
		}
	}
	return true
}
