package reference

import "fmt"

// ConcatChannels joins srcs along dimension 1: srcs[k] is [n, channels[k],
// inner] in row-major order (inner is H·W for images, 1 for [N, C]
// tensors), and the result is [n, Σ channels, inner].
func ConcatChannels(srcs [][]float64, n int, channels []int, inner int) []float64 {
	total := channelTotal("concat channels", len(srcs), channels)
	out := make([]float64, n*total*inner)
	for k, src := range srcs {
		if len(src) != n*channels[k]*inner {
			panic(fmt.Sprintf("reference: concat channels: part %d holds %d values, want %d·%d·%d",
				k, len(src), n, channels[k], inner))
		}
	}
	for s := 0; s < n; s++ {
		c0 := 0
		for k, src := range srcs {
			for c := 0; c < channels[k]; c++ {
				for e := 0; e < inner; e++ {
					out[(s*total+c0+c)*inner+e] = src[(s*channels[k]+c)*inner+e]
				}
			}
			c0 += channels[k]
		}
	}
	return out
}

// SplitChannels is the inverse of ConcatChannels: it cuts src [n, Σ
// channels, inner] into parts [n, channels[k], inner]. It is also
// ConcatChannels' backward: the gradient of each part is its range of
// the output's gradient.
func SplitChannels(src []float64, n int, channels []int, inner int) [][]float64 {
	total := channelTotal("split channels", len(channels), channels)
	if len(src) != n*total*inner {
		panic(fmt.Sprintf("reference: split channels: %d values, want %d·%d·%d", len(src), n, total, inner))
	}
	out := make([][]float64, len(channels))
	c0 := 0
	for k, ck := range channels {
		part := make([]float64, n*ck*inner)
		for s := 0; s < n; s++ {
			for c := 0; c < ck; c++ {
				for e := 0; e < inner; e++ {
					part[(s*ck+c)*inner+e] = src[(s*total+c0+c)*inner+e]
				}
			}
		}
		out[k] = part
		c0 += ck
	}
	return out
}

func channelTotal(op string, parts int, channels []int) int {
	if parts != len(channels) {
		panic(fmt.Sprintf("reference: %s: %d parts, %d channel counts", op, parts, len(channels)))
	}
	total := 0
	for _, c := range channels {
		total += c
	}
	return total
}
