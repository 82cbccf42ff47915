package reports

import (
	"math"
	"strconv"
)

// siPrefixes are the decimal multiples FormatCount steps through.
var siPrefixes = []string{"", "k", "M", "G", "T", "P", "E"}

// binaryUnits are the byte units FormatBytes steps through (IEC 80000-13).
var binaryUnits = []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}

// FormatCount formats a count of things — parameters, multiply-accumulates
// — for people: exact below 1000, otherwise with two decimals and an SI
// prefix, as "25.56 M" for ResNet-50's 25,557,032 parameters. A value that
// rounds up to 1000 of one prefix is written with the next ("1.00 M",
// never "1000.00 k").
func FormatCount(n int64) string {
	if n > -1000 && n < 1000 {
		return strconv.FormatInt(n, 10)
	}
	return scaled(n, 1000, 2, siPrefixes)
}

// FormatBytes formats a size in bytes for people, in binary units: exact
// below 1 KiB ("512 B"), otherwise with two decimals below 10 of a unit
// and one above ("3.06 MiB", "98.0 MiB", "527.8 MiB"), so every size keeps
// three or four significant digits.
func FormatBytes(n int64) string {
	if n > -1024 && n < 1024 {
		return strconv.FormatInt(n, 10) + " B"
	}
	return scaled(n, 1024, -1, binaryUnits)
}

// scaled divides n by base until it is below base and appends the unit.
// decimals < 0 selects FormatBytes's rule: two decimals below 10, else one.
func scaled(n int64, base float64, decimals int, units []string) string {
	v := math.Abs(float64(n))
	u := 0
	for v >= base && u < len(units)-1 {
		v /= base
		u++
	}
	d := decimals
	if d < 0 {
		d = 1
		if v < 10 {
			d = 2
		}
	}
	// Rounding may carry into the next unit (999.996 k → "1000.00 k");
	// then step up once more, or, below 10, lose a decimal (9.996 MiB →
	// "10.0 MiB").
	if r := roundTo(v, d); r >= base && u < len(units)-1 {
		v = r / base
		u++
		if decimals < 0 {
			d = 2
		}
	} else if decimals < 0 && d == 2 && r >= 10 {
		d = 1
	}
	s := strconv.FormatFloat(v, 'f', d, 64)
	if n < 0 {
		s = "-" + s
	}
	return s + " " + units[u]
}

// roundTo rounds v to d decimals the way strconv.FormatFloat prints it.
func roundTo(v float64, d int) float64 {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'f', d, 64), 64)
	return r
}
