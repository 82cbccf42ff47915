// Package tensortest is the test suite every tensor backend must pass: each
// kernel against a direct float64 reference implementation (the references
// themselves checked against float64 finite differences), on random inputs
// with fixed seeds, over odd shapes and batch 1, with guard values around
// every output to catch writes out of bounds. A backend's tests call Run.
//
// The optional kernel families (package tensor's capability.go) are tested
// along two routes: the device's own kernel, where the device implements
// the family's interface, and always the fallback package tensor composes
// from Kernels, on the same device with its capabilities hidden. A
// backend that lacks a fast kernel thus passes through the fallback it
// runs.
//
// Tolerances are named constants with a comment saying where they come
// from (tolerance.go).
package tensortest
