package tensor

// DropoutKey names one use of a dropout layer: the run's seed, the training
// step, the layer's index in the model, and the index within the mini-batch
// of the first sample (row) of the tensor it is applied to. With the
// element's index within its sample, it determines the mask completely, so
// splitting a mini-batch into micro-batches or shards never changes which
// units a sample drops.
type DropoutKey struct {
	Seed   uint64
	Step   uint64
	Layer  uint64
	Sample int
}

// DropoutKeep reports whether element elem of sample sample is kept by a
// dropout of probability p under key (key.Sample is ignored: sample is the
// sample's index in the mini-batch). It is counter-based — a hash of
// (seed, step, layer, sample, element) — and every backend must compute
// exactly this function.
//
// The hash chains SplitMix64's finaliser (Steele, Lea and Flood,
// "Fast splittable pseudorandom number generators", OOPSLA 2014) over the
// five counters; the top 24 bits of the result, as a fraction of 2^24, are
// the element's uniform variate u, and the element is kept when u ≥ p.
func DropoutKeep(key DropoutKey, sample, elem int, p float32) bool {
	return dropoutUniform24(DropoutSampleHash(key, sample), elem) >= dropoutThreshold(p)
}

// DropoutSampleHash returns the hash of (seed, step, layer, sample) that
// DropoutKeep combines with each element's index; kernels compute it once
// per sample.
func DropoutSampleHash(key DropoutKey, sample int) uint64 {
	h := mix64(key.Seed ^ 0x9e3779b97f4a7c15)
	h = mix64(h ^ key.Step)
	h = mix64(h ^ key.Layer)
	return mix64(h ^ uint64(sample))
}

// DropoutKeepHashed is DropoutKeep with the sample's hash precomputed and
// the threshold from DropoutThreshold.
func DropoutKeepHashed(sampleHash uint64, elem int, threshold uint32) bool {
	return dropoutUniform24(sampleHash, elem) >= threshold
}

// DropoutThreshold returns p as a 24-bit fixed-point threshold.
func DropoutThreshold(p float32) uint32 { return dropoutThreshold(p) }

func dropoutThreshold(p float32) uint32 {
	if p <= 0 {
		return 0
	}
	if p >= 1 {
		return 1 << 24
	}
	return uint32(float64(p)*(1<<24) + 0.5)
}

func dropoutUniform24(sampleHash uint64, elem int) uint32 {
	return uint32(mix64(sampleHash+uint64(elem)*0x9e3779b97f4a7c15) >> 40)
}

// mix64 is SplitMix64's finaliser, a bijection on 64-bit words.
func mix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
