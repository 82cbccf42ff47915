package transformerops

import "math"

// The normalisations of decoder transformers' rows: LayerNorm (GPT-2)
// and RMSNorm (Llama). x holds rows of d values; the forwards and the
// input gradients run over rows [lo, hi), the parameter gradients over
// columns [lo, hi) (see NormParamGrads).
//
// Every sum runs in float64. A row's float32 sum of d = 4096 values would
// lose about 12 bits to round-off, and a variance summed as E[x²] −
// E[x]² in float32 cancels catastrophically when the row's mean is
// large beside its spread; the two-pass float64 sums below keep the
// statistics exact to float32's precision. The loops are scalar Go, for
// which float64 arithmetic costs what float32 does, and they are bound by
// memory, not arithmetic. Each output is rounded to float32 once.

// LayerNormForward normalises rows [lo, hi) of x, as torch's
// nn.LayerNorm over the last dimension: mean m and biased variance v of
// the row, r = 1/√(v + eps), y = (x − m)·r·gamma + beta; it saves m and
// r in mean and rstd.
func LayerNormForward(x, gamma, beta, y, mean, rstd []float32, d int, eps float32, lo, hi int) {
	gamma, beta = gamma[:d], beta[:d]
	for i := lo; i < hi; i++ {
		row, out := x[i*d:(i+1)*d], y[i*d:(i+1)*d]
		s := 0.0
		for _, v := range row {
			s += float64(v)
		}
		m := s / float64(d)
		q := 0.0
		for _, v := range row {
			c := float64(v) - m
			q += c * c
		}
		r := 1 / math.Sqrt(q/float64(d)+float64(eps))
		mean[i], rstd[i] = float32(m), float32(r)
		for j, v := range row {
			out[j] = float32((float64(v)-m)*r*float64(gamma[j]) + float64(beta[j]))
		}
	}
}

// LayerNormBackward sets dx (unless nil) and accumulates dgamma and
// dbeta (each unless nil) for all n rows: LayerNormInputGrad and
// NormParamGrads over the whole tensor.
func LayerNormBackward(x, dy, gamma, mean, rstd, dx, dgamma, dbeta []float32, d, n int) {
	if dx != nil {
		LayerNormInputGrad(x, dy, gamma, mean, rstd, dx, d, 0, n)
	}
	NormParamGrads(x, dy, mean, rstd, dgamma, dbeta, d, n, 0, d)
}

// LayerNormInputGrad sets dx for rows [lo, hi) from the statistics the
// forward saved: with x̂ = (x − m)·r and g = dy·gamma,
//
//	dx = r·(g − mean(g) − x̂·mean(g·x̂)),
//
// the means over the row (the paths through m and r).
func LayerNormInputGrad(x, dy, gamma, mean, rstd, dx []float32, d, lo, hi int) {
	gamma = gamma[:d]
	for i := lo; i < hi; i++ {
		row, g, out := x[i*d:(i+1)*d], dy[i*d:(i+1)*d], dx[i*d:(i+1)*d]
		m, r := float64(mean[i]), float64(rstd[i])
		sg, sgx := 0.0, 0.0
		for j, v := range row {
			gj := float64(g[j]) * float64(gamma[j])
			sg += gj
			sgx += gj * (float64(v) - m) * r
		}
		a, b := sg/float64(d), sgx/float64(d)
		for j, v := range row {
			xh := (float64(v) - m) * r
			out[j] = float32(r * (float64(g[j])*float64(gamma[j]) - a - xh*b))
		}
	}
}

// RMSNormForward normalises rows [lo, hi) of x by their root mean
// square, as LlamaRMSNorm: r = 1/√(mean(x²) + eps), y = x·r·gamma; it
// saves r in rstd.
func RMSNormForward(x, gamma, y, rstd []float32, d int, eps float32, lo, hi int) {
	gamma = gamma[:d]
	for i := lo; i < hi; i++ {
		row, out := x[i*d:(i+1)*d], y[i*d:(i+1)*d]
		q := 0.0
		for _, v := range row {
			q += float64(v) * float64(v)
		}
		r := 1 / math.Sqrt(q/float64(d)+float64(eps))
		rstd[i] = float32(r)
		for j, v := range row {
			out[j] = float32(float64(v) * r * float64(gamma[j]))
		}
	}
}

// RMSNormBackward sets dx (unless nil) and accumulates dgamma (unless
// nil) for all n rows: RMSNormInputGrad and NormParamGrads over the
// whole tensor.
func RMSNormBackward(x, dy, gamma, rstd, dx, dgamma []float32, d, n int) {
	if dx != nil {
		RMSNormInputGrad(x, dy, gamma, rstd, dx, d, 0, n)
	}
	NormParamGrads(x, dy, nil, rstd, dgamma, nil, d, n, 0, d)
}

// RMSNormInputGrad sets dx for rows [lo, hi) from the saved r: with x̂ =
// x·r and g = dy·gamma, dx = r·(g − x̂·mean(g·x̂)).
func RMSNormInputGrad(x, dy, gamma, rstd, dx []float32, d, lo, hi int) {
	gamma = gamma[:d]
	for i := lo; i < hi; i++ {
		row, g, out := x[i*d:(i+1)*d], dy[i*d:(i+1)*d], dx[i*d:(i+1)*d]
		r := float64(rstd[i])
		sgx := 0.0
		for j, v := range row {
			sgx += float64(g[j]) * float64(gamma[j]) * float64(v) * r
		}
		b := sgx / float64(d)
		for j, v := range row {
			out[j] = float32(r * (float64(g[j])*float64(gamma[j]) - float64(v)*r*b))
		}
	}
}

// paramBlock is how many columns NormParamGrads sums at a time: its
// float64 sums of a block sit on the stack (2 KiB), and each row
// contributes 512 contiguous bytes of x and of dy to them.
const paramBlock = 128

// NormParamGrads accumulates, for the columns [lo, hi) of n rows of d
// values, dgamma += Σ dy·x̂ and dbeta += Σ dy over the rows, x̂ = (x −
// mean)·rstd (mean nil for RMSNorm's x̂ = x·rstd); a nil dgamma or dbeta
// is skipped. Sharing columns out, rather than rows, gives each thread
// its own entries of the gradients: no per-thread partial sums to hold
// and add up, and every column sums its rows in one order whatever the
// split. Each entry is rounded once, when its float64 sum is added.
func NormParamGrads(x, dy, mean, rstd, dgamma, dbeta []float32, d, n, lo, hi int) {
	if dgamma == nil && dbeta == nil {
		return
	}
	for j0 := lo; j0 < hi; j0 += paramBlock {
		j1 := min(j0+paramBlock, hi)
		var sg, sb [paramBlock]float64
		for i := 0; i < n; i++ {
			m, r := 0.0, float64(rstd[i])
			if mean != nil {
				m = float64(mean[i])
			}
			row, g := x[i*d+j0:i*d+j1], dy[i*d+j0:i*d+j1]
			for j, v := range row {
				gj := float64(g[j])
				sg[j] += gj * (float64(v) - m) * r
				sb[j] += gj
			}
		}
		if dgamma != nil {
			for j := j0; j < j1; j++ {
				dgamma[j] = float32(float64(dgamma[j]) + sg[j-j0])
			}
		}
		if dbeta != nil {
			for j := j0; j < j1; j++ {
				dbeta[j] = float32(float64(dbeta[j]) + sb[j-j0])
			}
		}
	}
}
