package cpu

import "fmt"

// Strided rows: the convolution lowering moves a map's rows between a
// plane and a column matrix whose rows are spaced differently (a padded
// plane's rows are wider than the output's). Rows of a few values (the
// 9×9 maps of Inception-v3 at 96 px, the 4×4 and 8×8 ones of ResNet-50
// and VGG at 64 px) cost more in loop overhead than in values; addRows
// and copyRows take a whole band of rows in one call of a vector loop,
// each row's tail in 8- and 4-value vectors and scalars (rows_amd64.s).

// addRows sets dst[r·ds + q] += src[r·ss + q] for r < rows and q < n.
func addRows(dst []float32, ds int, src []float32, ss int, rows, n int) {
	if rows <= 0 || n <= 0 {
		return
	}
	if ds < 0 || ss < 0 || (rows-1)*ds+n > len(dst) || (rows-1)*ss+n > len(src) {
		rowsOverrun(len(dst), ds, len(src), ss, rows, n)
	}
	// The checks and the assembly loops sit here directly, in addRows and
	// copyRows alike: the calls of a lowering are many and short (a 4×4
	// map's tap is 16 values), and a shared checking function is too large
	// for the compiler to inline.
	switch bnSIMD {
	case 16:
		addRows16(&dst[0], ds, &src[0], ss, rows, n)
	case 8:
		addRows8(&dst[0], ds, &src[0], ss, rows, n)
	default:
		for r := range rows {
			d, s := dst[r*ds:r*ds+n], src[r*ss:r*ss+n]
			for q, v := range s {
				d[q] += v
			}
		}
	}
}

// copyRows sets dst[r·ds + q] = src[r·ss + q] for r < rows and q < n.
func copyRows(dst []float32, ds int, src []float32, ss int, rows, n int) {
	if rows <= 0 || n <= 0 {
		return
	}
	if ds < 0 || ss < 0 || (rows-1)*ds+n > len(dst) || (rows-1)*ss+n > len(src) {
		rowsOverrun(len(dst), ds, len(src), ss, rows, n)
	}
	switch bnSIMD {
	case 16:
		copyRows16(&dst[0], ds, &src[0], ss, rows, n)
	case 8:
		copyRows8(&dst[0], ds, &src[0], ss, rows, n)
	default:
		for r := range rows {
			copy(dst[r*ds:r*ds+n], src[r*ss:r*ss+n])
		}
	}
}

// rowsOverrun panics: rows that do not lie inside both slices (the
// assembly loops test no bounds).
func rowsOverrun(dn, ds, sn, ss, rows, n int) {
	panic(fmt.Sprintf("cpu: %d rows of %d values, %d and %d apart, overrun slices of %d and %d", rows, n, ds, ss, dn, sn))
}
