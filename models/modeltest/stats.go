package modeltest

import (
	"fmt"
	"math"
)

// momentSE is how many standard errors a sample mean or variance may lie
// from its expected value: a correct initialiser fails a 5-SE check with
// probability about 6e-7 per statistic, while the tests' sample sizes
// (≥ 1e4) put a 5 % error in the scale at tens of standard errors.
const momentSE = 5

// MomentErr reports whether the sample v has mean and standard deviation
// consistent with want. The mean's standard error is std/√n; the
// variance's is √((m4 − s⁴)/n) with the sample's fourth central moment
// m4, the asymptotic standard error of a sample variance of any
// distribution.
func MomentErr(v []float32, mean, std float64) error {
	n := float64(len(v))
	var m float64
	for _, x := range v {
		m += float64(x)
	}
	m /= n
	var s2, m4 float64
	for _, x := range v {
		d := float64(x) - m
		s2 += d * d
		m4 += d * d * d * d
	}
	s2 /= n
	m4 /= n
	if se := std / math.Sqrt(n); math.Abs(m-mean) > momentSE*se {
		return fmt.Errorf("mean %.6g, want %.6g ± %.3g", m, mean, momentSE*se)
	}
	if se := math.Sqrt((m4 - s2*s2) / n); math.Abs(s2-std*std) > momentSE*se {
		return fmt.Errorf("std %.6g, want %.6g (variance %.6g, want %.6g ± %.3g)", math.Sqrt(s2), std, s2, std*std, momentSE*se)
	}
	return nil
}

// TruncNormalMoments returns the mean and standard deviation of N(mean,
// std²) conditioned on [a, b] (Johnson, Kotz and Balakrishnan,
// "Continuous Univariate Distributions", vol. 1, §10.1).
func TruncNormalMoments(mean, std, a, b float64) (float64, float64) {
	phi := func(z float64) float64 { return math.Exp(-z*z/2) / math.Sqrt(2*math.Pi) }
	cdf := func(z float64) float64 { return 0.5 * math.Erfc(-z/math.Sqrt2) }
	al, be := (a-mean)/std, (b-mean)/std
	z := cdf(be) - cdf(al)
	d := (phi(al) - phi(be)) / z
	v := 1 + (al*phi(al)-be*phi(be))/z - d*d
	return mean + std*d, std * math.Sqrt(v)
}
