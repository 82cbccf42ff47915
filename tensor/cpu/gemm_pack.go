package cpu

// packA packs rows [ic, ic+mc) and steps [pc, pc+kc) of alpha·op(a) into
// slivers of mr rows: sliver s holds at s·mr·kc + p·mr + r the value of
// row ic + s·mr + r at step pc + p, and zeros past the last row.
func packA(dst []float32, transA bool, a []float32, lda, ic, pc, mc, kc, mr int, alpha float32) {
	for s := 0; s*mr < mc; s++ {
		sl := dst[s*mr*kc : (s+1)*mr*kc]
		rows := min(mr, mc-s*mr)
		i0 := ic + s*mr
		if transA { // a is k×m: a step is a contiguous run of rows
			for p := 0; p < kc; p++ {
				src := a[(pc+p)*lda+i0 : (pc+p)*lda+i0+rows]
				out := sl[p*mr : p*mr+mr]
				for r, v := range src {
					out[r] = alpha * v
				}
				clear(out[rows:])
			}
			continue
		}
		for r := 0; r < rows; r++ {
			src := a[(i0+r)*lda+pc : (i0+r)*lda+pc+kc]
			for p, v := range src {
				sl[p*mr+r] = alpha * v
			}
		}
		for r := rows; r < mr; r++ {
			for p := 0; p < kc; p++ {
				sl[p*mr+r] = 0
			}
		}
	}
}

// packB packs steps [pc, pc+kc) and columns [jc, jc+nc) of op(b) into
// slivers of nr columns: sliver t holds at t·nr·kc + p·nr + j the value of
// column jc + t·nr + j at step pc + p, and zeros past the last column.
func packB(dst []float32, transB bool, b []float32, ldb, pc, jc, kc, nc, nr int) {
	for t := 0; t*nr < nc; t++ {
		sl := dst[t*nr*kc : (t+1)*nr*kc]
		cols := min(nr, nc-t*nr)
		j0 := jc + t*nr
		if !transB { // b is k×n: a step is a contiguous run of columns
			// All kc steps as one band (a copy call per step of 8 or
			// 16 values cost more than the values).
			copyRows(sl, nr, b[pc*ldb+j0:], ldb, kc, cols)
			if cols < nr {
				for p := 0; p < kc; p++ {
					clear(sl[p*nr+cols : p*nr+nr])
				}
			}
			continue
		}
		for j := 0; j < cols; j++ {
			src := b[(j0+j)*ldb+pc : (j0+j)*ldb+pc+kc]
			for p, v := range src {
				sl[p*nr+j] = v
			}
		}
		for j := cols; j < nr; j++ {
			for p := 0; p < kc; p++ {
				sl[p*nr+j] = 0
			}
		}
	}
}
