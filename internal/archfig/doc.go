// Package archfig owns the architecture figure of docs/architecture.md
// (docs/img/architecture.svg): pipecast's data flow as data, boxes named
// by their packages, groups and labelled arrows at hand-placed
// coordinates (Architecture), a renderer to SVG (Figure.SVG) and the
// checks that every text fits its box and that no label lies on a line
// or a box (Figure.Check).
//
// The figure is committed; TestArchitectureSVG compares it with what
// Architecture renders, and scripts/architecture-figure.sh writes it
// again after an edit of the data here.
package archfig
