// Package reference holds direct float64 implementations of every tensor
// kernel: the definitions that backends are tested against (package
// tensortest) and that layer tests compose into float64 references of
// whole blocks. They favour plain loops that read like the formula over
// speed. Each backward here is itself checked against central finite
// differences of its forward.
package reference
