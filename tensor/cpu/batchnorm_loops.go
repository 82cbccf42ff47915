package cpu

// The batch-norm kernels' loops (batchnorm.go). Each works on one
// sample's block of channels: len(acc) channels of hw values each. With
// hw = 1 (an [N, C] input) the block is a run of consecutive channels,
// one value each, and they loop over it directly; otherwise each
// channel's hw values are a contiguous run that the loops unroll by four
// with independent accumulators, so that the float64 additions do not
// wait on each other, after the assembly loops have taken its runs of 16
// (AVX-512, bn_amd64.s) or 8 (AVX2, bn_avx2_amd64.s) where the CPU has
// them (bnSIMD).

// bnShiftedSums adds each channel's Σ (x − shift) to s1 and Σ (x − shift)²
// to s2, in float64.
func bnShiftedSums(x []float32, hw int, shift []float32, s1, s2 []float64) {
	if hw == 1 {
		x, s1, s2 = x[:len(shift)], s1[:len(shift)], s2[:len(shift)]
		for j, v := range x {
			d := float64(v) - float64(shift[j])
			s1[j] += d
			s2[j] += d * d
		}
		return
	}
	for j, sh := range shift {
		a, b := bnShiftedSum(x[j*hw:(j+1)*hw], float64(sh))
		s1[j] += a
		s2[j] += b
	}
}

// bnShiftedSum returns Σ (x − k) and Σ (x − k)² in float64.
func bnShiftedSum(x []float32, k float64) (s1, s2 float64) {
	var a0, a1, a2, a3, q0, q1, q2, q3 float64
	i := 0
	if n := bnRun(len(x)); n > 0 {
		var acc [16]float64
		bnShiftedSumSIMD(&x[0], n, k, &acc)
		a0, q0 = sum8(acc[:8]), sum8(acc[8:])
		i = n
	}
	for ; i <= len(x)-4; i += 4 {
		v := x[i : i+4 : i+4]
		d0, d1 := float64(v[0])-k, float64(v[1])-k
		d2, d3 := float64(v[2])-k, float64(v[3])-k
		a0, a1, a2, a3 = a0+d0, a1+d1, a2+d2, a3+d3
		q0, q1, q2, q3 = q0+d0*d0, q1+d1*d1, q2+d2*d2, q3+d3*d3
	}
	for _, v := range x[i:] {
		d := float64(v) - k
		a0 += d
		q0 += d * d
	}
	return (a0 + a1) + (a2 + a3), (q0 + q1) + (q2 + q3)
}

// sum8 adds up 8 partial sums pairwise.
func sum8(v []float64) float64 {
	v = v[:8]
	return ((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7]))
}

// bnGradientSums adds each channel's Σ dy to sumDy and Σ dy·(x − mean) to
// sumDyXc, in float64.
func bnGradientSums(x, dy []float32, hw int, mean []float32, sumDy, sumDyXc []float64) {
	if hw == 1 {
		k := len(mean)
		x, dy, sumDy, sumDyXc = x[:k], dy[:k], sumDy[:k], sumDyXc[:k]
		for j, g := range dy {
			g64 := float64(g)
			sumDy[j] += g64
			sumDyXc[j] += g64 * (float64(x[j]) - float64(mean[j]))
		}
		return
	}
	for j, m := range mean {
		s, sx := bnGradientSum(x[j*hw:(j+1)*hw], dy[j*hw:(j+1)*hw], float64(m))
		sumDy[j] += s
		sumDyXc[j] += sx
	}
}

// bnGradientSum returns Σ dy and Σ dy·(x − mean) in float64.
func bnGradientSum(x, dy []float32, mean float64) (s, sx float64) {
	var s0, s1, s2, s3, t0, t1, t2, t3 float64
	dy = dy[:len(x)]
	i := 0
	if n := bnRun(len(x)); n > 0 {
		var acc [16]float64
		bnGradientSumSIMD(&x[0], &dy[0], n, mean, &acc)
		s0, t0 = sum8(acc[:8]), sum8(acc[8:])
		i = n
	}
	for ; i <= len(x)-4; i += 4 {
		v, g := x[i:i+4:i+4], dy[i:i+4:i+4]
		g0, g1, g2, g3 := float64(g[0]), float64(g[1]), float64(g[2]), float64(g[3])
		s0, s1, s2, s3 = s0+g0, s1+g1, s2+g2, s3+g3
		t0 += g0 * (float64(v[0]) - mean)
		t1 += g1 * (float64(v[1]) - mean)
		t2 += g2 * (float64(v[2]) - mean)
		t3 += g3 * (float64(v[3]) - mean)
	}
	for ; i < len(x); i++ {
		g := float64(dy[i])
		v := x[i]
		s0 += g
		t0 += g * (float64(v) - mean)
	}
	return (s0 + s1) + (s2 + s3), (t0 + t1) + (t2 + t3)
}

// bnAffine sets y = (x − m)·a + b per channel, in float32.
func bnAffine(x, y []float32, hw int, m, a, b []float32) {
	if hw == 1 {
		k := len(m)
		x, y, a, b = x[:k], y[:k], a[:k], b[:k]
		for j, v := range x {
			y[j] = (v-m[j])*a[j] + b[j]
		}
		return
	}
	a, b = a[:len(m)], b[:len(m)]
	for j, mj := range m {
		xp, yp := x[j*hw:(j+1)*hw], y[j*hw:(j+1)*hw]
		aj, bj := a[j], b[j]
		yp = yp[:len(xp)]
		i := 0
		if n := bnRun(len(xp)); n > 0 {
			bnAffineSIMD(&xp[0], &yp[0], n, mj, aj, bj)
			i = n
		}
		for ; i <= len(xp)-4; i += 4 {
			u, v := xp[i:i+4:i+4], yp[i:i+4:i+4]
			v[0] = (u[0]-mj)*aj + bj
			v[1] = (u[1]-mj)*aj + bj
			v[2] = (u[2]-mj)*aj + bj
			v[3] = (u[3]-mj)*aj + bj
		}
		for ; i < len(xp); i++ {
			yp[i] = (xp[i]-mj)*aj + bj
		}
	}
}

// bnGradient sets dx = p·dy + q·(x − mean) + r per channel, in float32.
func bnGradient(x, dy, dx []float32, hw int, mean, p, q, r []float32) {
	k := len(mean)
	p, q, r = p[:k], q[:k], r[:k]
	if hw == 1 {
		x, dy, dx = x[:k], dy[:k], dx[:k]
		for j, v := range x {
			dx[j] = dy[j]*p[j] + (v-mean[j])*q[j] + r[j]
		}
		return
	}
	for j, m := range mean {
		xp, dyp, dxp := x[j*hw:(j+1)*hw], dy[j*hw:(j+1)*hw], dx[j*hw:(j+1)*hw]
		pj, qj, rj := p[j], q[j], r[j]
		dyp, dxp = dyp[:len(xp)], dxp[:len(xp)]
		i := 0
		if n := bnRun(len(xp)); n > 0 {
			bnGradientSIMD(&xp[0], &dyp[0], &dxp[0], n, m, pj, qj, rj)
			i = n
		}
		for ; i <= len(xp)-4; i += 4 {
			u, g, o := xp[i:i+4:i+4], dyp[i:i+4:i+4], dxp[i:i+4:i+4]
			o[0] = g[0]*pj + (u[0]-m)*qj + rj
			o[1] = g[1]*pj + (u[1]-m)*qj + rj
			o[2] = g[2]*pj + (u[2]-m)*qj + rj
			o[3] = g[3]*pj + (u[3]-m)*qj + rj
		}
		for ; i < len(xp); i++ {
			dxp[i] = dyp[i]*pj + (xp[i]-m)*qj + rj
		}
	}
}
