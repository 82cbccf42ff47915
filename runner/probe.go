package runner

import "time"

// The probe's work, fixed so that its time on one machine moves only with
// what else the machine runs. The arithmetic runs probeRounds float32
// multiply-adds on each of probeFloats floats (16 KiB, in any L1 cache);
// the stream reads one word of
// every 64-byte line of probeStreamBytes, more than a core's L2 on common
// server CPUs (1–2 MiB), so that it comes from the shared last-level
// cache or memory. On a 2-core Sapphire Rapids VM a probe takes about
// 0.45–0.55 ms (0.2 ms of arithmetic, 0.3 ms of stream), 0.8 ms when the
// machine is busy. A run probes once per step, warm-up included, so it
// costs that much per step (2 % of the default workload's 25 ms steps)
// and 8 MiB of memory.
const (
	probeFloats      = 4096
	probeRounds      = 96
	probeStreamBytes = 8 << 20
	probeLineWords   = 64 / 8 // 64-bit words in a cache line
)

// A probe's multiply-add x·a + b has the fixed point b/(1 − a) = 1, where
// its floats start, so that they never become subnormal, whose arithmetic
// is slow on some CPUs: every probe does the same work.
const (
	probeScale  = float32(0.999)
	probeOffset = float32(0.001)
)

// probe is a fixed piece of work that exercises what other tenants of a
// shared machine disturb: a core's floating-point arithmetic and the
// bandwidth of the shared last-level cache and memory. Timed between
// steps, while no device computes, it measures the machine rather than
// the run.
type probe struct {
	floats []float32
	stream []uint64
	sink   uint64 // keeps the stream's reads from being optimised away
}

// newProbe allocates the probe's buffers and runs it once, untimed, so
// that the stream's pages are mapped before the first timed probe.
func newProbe() *probe {
	p := &probe{floats: make([]float32, probeFloats), stream: make([]uint64, probeStreamBytes/8)}
	for i := range p.floats {
		p.floats[i] = 1
	}
	for i := range p.stream {
		p.stream[i] = uint64(i)
	}
	p.work()
	return p
}

// time runs the probe once and returns its wall time in nanoseconds.
func (p *probe) time() int64 {
	start := time.Now()
	p.work()
	return int64(time.Since(start))
}

// work is the probe's work: probeRounds passes of x = x·a + b over the
// floats, then one read of every cache line of the stream.
func (p *probe) work() {
	x := p.floats
	for range probeRounds {
		for i := range x {
			x[i] = x[i]*probeScale + probeOffset
		}
	}
	// Four sums, so that the reads are not serialised on one addition.
	var s0, s1, s2, s3 uint64
	s := p.stream
	const step = 4 * probeLineWords
	for i := 0; i+step <= len(s); i += step {
		s0 += s[i]
		s1 += s[i+probeLineWords]
		s2 += s[i+2*probeLineWords]
		s3 += s[i+3*probeLineWords]
	}
	p.sink += s0 + s1 + s2 + s3
}
