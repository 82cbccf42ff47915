package archfig

// Path is the part of the data flow an element belongs to; it picks the
// element's colours.
type Path int

const (
	// Shared is what both paths use: the command line, the configuration
	// and its program, the reports.
	Shared Path = iota
	// Measure is the measuring path: the runner executes the program and
	// the profiler records what happened.
	Measure
	// Forecast is the forecasting path: the predictor fits costs to the
	// measured records and simulates the same program with them.
	Forecast
)

// Point is a position in pixels, y growing downwards.
type Point struct{ X, Y float64 }

// Rect is a rectangle: its top left corner, width and height in pixels.
type Rect struct{ X, Y, W, H float64 }

// Anchor is where a text's position lies along the text, as SVG's
// text-anchor.
type Anchor int

const (
	Start Anchor = iota
	Middle
	End
)

// Text is one line of text at a baseline point. Size is in pixels.
type Text struct {
	S      string
	At     Point
	Anchor Anchor
	Size   float64
	Bold   bool
	Path   Path
}

// Box is a component: a title saying what it does and a one-line
// subtitle naming its package or packages.
type Box struct {
	ID    string
	Title string
	Sub   string
	Rect
	Path Path
}

// Group is a frame drawn behind boxes that belong together, with an
// optional label.
type Group struct {
	ID string
	Rect
	Path  Path
	Label Text
}

// Arrow is a labelled polyline from one box to another; the last point
// carries the arrowhead. From and To name the boxes or groups it joins by
// ID: its first point lies on From's edge, its last on To's.
type Arrow struct {
	From, To string
	Points   []Point
	Label    Text
	Path     Path
	Dashed   bool
}

// Figure is a whole drawing, W by H pixels.
type Figure struct {
	Title  string
	W, H   float64
	Groups []Group
	Boxes  []Box
	Arrows []Arrow
	Notes  []Text
}
