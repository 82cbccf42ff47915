// Package tensortest is the test suite every tensor backend must pass: each
// kernel against a direct float64 reference implementation (the references
// themselves checked against float64 finite differences), on random inputs
// with fixed seeds, over odd shapes and batch 1, with guard values around
// every output to catch writes out of bounds. A backend's tests call Run.
//
// Tolerances are named constants with a comment saying where they come
// from (tolerance.go).
package tensortest
