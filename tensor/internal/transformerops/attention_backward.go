package transformerops

// The backward of attention.go's kernels, over all b sequences at once:
// dk and dv sum over the query heads that share a key/value head, so a
// share of the work by (sequence, query head) would race on them.

// AttentionContextBackward sets dprobs = dout·Vᵀ per sequence and query
// head (0 at the masked positions) and, unless dv is nil, dv = Σ_h
// probs[b, h]ᵀ·dout[b, :, h, :] over the query heads h reading each
// key/value head.
func AttentionContextBackward(probs, v, dout, dprobs, dv []float32, p AttentionSizes, b int) {
	s, hd := p.Seq, p.HeadDim
	if dv != nil {
		clear(dv)
	}
	for j := range b * p.Heads {
		bi, h := j/p.Heads, j%p.Heads
		g := p.KVHead(h)
		for t := 0; t < s; t++ {
			row := probs[(j*s+t)*s : (j*s+t+1)*s]
			drow := dprobs[(j*s+t)*s : (j*s+t+1)*s]
			do := dout[p.QRow(bi, t, h):][:hd]
			n := p.Visible(t)
			for u := 0; u < n; u++ {
				vu := v[p.KVRow(bi, u, g):][:hd]
				var sum float32
				for i, x := range do {
					sum += x * vu[i]
				}
				drow[u] = sum
				if dv == nil {
					continue
				}
				w, dvu := row[u], dv[p.KVRow(bi, u, g):][:hd]
				for i, x := range do {
					dvu[i] += w * x
				}
			}
			clear(drow[n:])
		}
	}
}

// AttentionScoresBackward replaces dprobs by the gradient of the scores,
// dscores = probs⊙(dprobs − Σ_row dprobs⊙probs) (0 at the masked
// positions), and sets dq = Scale·dscores·K unless dq is nil and dk =
// Scale·Σ_h dscores[b, h]ᵀ·Q over the query heads h reading each key
// head unless dk is nil.
func AttentionScoresBackward(q, k, probs, dprobs, dq, dk []float32, p AttentionSizes, b int) {
	s, hd := p.Seq, p.HeadDim
	if dk != nil {
		clear(dk)
	}
	for j := range b * p.Heads {
		bi, h := j/p.Heads, j%p.Heads
		g := p.KVHead(h)
		for t := 0; t < s; t++ {
			ds := dprobs[(j*s+t)*s : (j*s+t+1)*s]
			n := p.Visible(t)
			SoftmaxBackwardRow(probs[(j*s+t)*s:(j*s+t+1)*s], ds, n)
			qt := q[p.QRow(bi, t, h):][:hd]
			var dqt []float32
			if dq != nil {
				dqt = dq[p.QRow(bi, t, h):][:hd]
				clear(dqt)
			}
			for u := 0; u < n; u++ {
				w := ds[u]
				if dqt != nil {
					for i, x := range k[p.KVRow(bi, u, g):][:hd] {
						dqt[i] += w * x
					}
				}
				if dk != nil {
					dku := dk[p.KVRow(bi, u, g):][:hd]
					for i, x := range qt {
						dku[i] += w * x
					}
				}
			}
			for i := range dqt {
				dqt[i] *= p.Scale
			}
		}
	}
	for i := range dk {
		dk[i] *= p.Scale
	}
}
