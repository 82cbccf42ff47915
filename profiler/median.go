package profiler

import "slices"

// Median returns the median of xs: the middle value of an odd count, the
// mean of the two middle values of an even one (rounded toward zero for
// integers), and 0 for none. xs is left as it was. Every median pipecast
// reports — step times, block times, calibration samples, fitted
// intercepts — is this one.
func Median[T ~int64 | ~float64](xs []T) T {
	n := len(xs)
	if n == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
