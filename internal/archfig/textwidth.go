package archfig

import "unicode/utf8"

// The advance widths, in thousandths of an em, of DejaVu Sans and DejaVu
// Sans Bold for the printable ASCII characters (space to tilde), read from
// the fonts' hmtx tables. DejaVu is the widest of the sans-serif fonts a
// browser is likely to pick (Helvetica, Arial and Liberation Sans are
// narrower), so text measured with it fits its box in all of them.
var regularWidths = [95]uint16{
	318, 401, 460, 838, 636, 950, 780, 275, 390, 390, 500, 838, 318, 361, 318, 337,
	636, 636, 636, 636, 636, 636, 636, 636, 636, 636, 337, 337, 838, 838, 838, 531,
	1000, 684, 686, 698, 770, 632, 575, 775, 752, 295, 295, 656, 557, 863, 748, 787,
	603, 787, 695, 635, 611, 732, 684, 989, 685, 611, 685, 390, 337, 390, 838, 500,
	500, 613, 635, 550, 635, 615, 352, 635, 634, 278, 278, 579, 278, 974, 634, 612,
	635, 635, 411, 521, 392, 634, 592, 818, 592, 592, 525, 636, 337, 636, 838,
}

var boldWidths = [95]uint16{
	348, 456, 521, 838, 696, 1002, 872, 306, 457, 457, 523, 838, 380, 415, 380, 365,
	696, 696, 696, 696, 696, 696, 696, 696, 696, 696, 400, 400, 838, 838, 838, 580,
	1000, 774, 762, 734, 830, 683, 683, 821, 837, 372, 372, 775, 637, 995, 837, 850,
	733, 850, 770, 720, 682, 812, 774, 1103, 771, 724, 725, 457, 365, 457, 838, 500,
	500, 675, 716, 593, 716, 678, 435, 716, 712, 343, 343, 665, 343, 1042, 712, 687,
	716, 716, 493, 595, 478, 712, 652, 924, 645, 652, 582, 712, 365, 712, 838,
}

// extraWidths holds the few characters beyond ASCII the figure uses,
// regular and bold.
var extraWidths = map[rune][2]uint16{
	'·': {318, 380},
	'→': {838, 838},
	'←': {838, 838},
	'×': {838, 838},
	'–': {500, 500},
	'—': {1000, 1000},
	'…': {1000, 1000},
}

// unknownWidth is the width taken for any other character: a whole em,
// wider than any letter, so that a new character errs towards a wider box.
const unknownWidth = 1000

// TextWidth returns the width in pixels of s set in size-pixel DejaVu
// Sans, bold or not.
func TextWidth(s string, size float64, bold bool) float64 {
	var units int
	for len(s) > 0 {
		r, n := utf8.DecodeRuneInString(s)
		s = s[n:]
		switch w, ok := extraWidths[r]; {
		case r >= ' ' && r <= '~' && bold:
			units += int(boldWidths[r-' '])
		case r >= ' ' && r <= '~':
			units += int(regularWidths[r-' '])
		case ok && bold:
			units += int(w[1])
		case ok:
			units += int(w[0])
		default:
			units += unknownWidth
		}
	}
	return float64(units) * size / 1000
}
