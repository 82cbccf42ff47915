package cpu

import "github.com/pipecast/pipecast/internal/cpucache"

// gemmBlocking is how the GEMM driver cuts a product for the caches: kc
// steps of the inner dimension per packed slice, mc rows of op(A) per
// packed block and nc columns of op(B) per packed panel.
type gemmBlocking struct{ kc, mc, nc int }

// The caches assumed where the system names none: a common x86 core of
// the last decade.
const (
	defaultL1d = 32 << 10
	defaultL2  = 1 << 20
	defaultL3  = 2 << 20 // one core's share
)

// blockingFor returns the blocking of an mr×nr micro-kernel on a core
// with l1 bytes of L1 data cache, l2 of L2 and l3 of its share of the
// L3, after the analytical model of Low et al. ("Analytical Modeling Is
// Enough for High-Performance BLIS", ACM TOMS 2016), rounded to whole
// slivers:
//
//   - the packed B sliver (kc·nr values) stays in L1 while every A sliver
//     of a block streams past it: it may fill two thirds of L1, the rest
//     holding the A sliver in flight and the C tile;
//   - the packed A block (mc·kc) stays in L2 while the B slivers go by:
//     half of L2;
//   - the packed B panel (kc·nc) stays in the core's share of L3: half of
//     it.
//
// Each is capped at gemmKC, gemmMC and gemmNC, which size the packing
// buffers: so a product holds the same scratch on every CPU, and the
// meta backend's account of it (GemmWorkspaceElems) does not depend on
// the machine. On the CPUs measured (L1d 48 KiB, L2 1 MiB or more) the
// rules give the caps themselves; they cut the blocking on smaller
// caches, where the caps would spill the B sliver out of L1 (a 32 KiB
// L1 and the AVX-512 kernel's 32 columns: kc 160, not 256).
func blockingFor(mr, nr int, l1, l2, l3 int64) gemmBlocking {
	const f32 = 4
	kc := int(l1 * 2 / 3 / int64(nr*f32))
	kc = max(32, min(gemmKC, kc/16*16))
	mc := int(l2 / 2 / int64(kc*f32))
	mc = max(mr, min(gemmMC/mr*mr, mc/mr*mr))
	nc := int(l3 / 2 / int64(kc*f32))
	nc = max(nr, min(gemmNC/nr*nr, nc/nr*nr))
	return gemmBlocking{kc: kc, mc: mc, nc: nc}
}

// cacheBlocking returns the blocking of an mr×nr kernel on this machine's
// caches (cpucache), the defaults standing in for any it cannot read.
func cacheBlocking(mr, nr int) gemmBlocking {
	l1, _, ok := cpucache.Size(1)
	if !ok {
		l1 = defaultL1d
	}
	l2, _, ok := cpucache.Size(2)
	if !ok {
		l2 = defaultL2
	}
	l3, shared, ok := cpucache.Size(3)
	if ok {
		l3 /= int64(max(shared, 1))
	} else {
		l3 = defaultL3
	}
	return blockingFor(mr, nr, l1, l2, l3)
}
