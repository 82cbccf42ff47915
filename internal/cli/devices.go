package cli

import "math"

// checkSpeeds checks --speeds: each a positive, finite speed.
func checkSpeeds(speeds []float64) error {
	for _, s := range speeds {
		if !(s > 0) || math.IsInf(s, 0) {
			return usageErrorf("--speeds %v: want a positive, finite speed a device", s)
		}
	}
	return nil
}
