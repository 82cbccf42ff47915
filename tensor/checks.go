package tensor

import "fmt"

// The argument checks every backend's kernels share: each panics with a
// one-line message naming the kernel and the shapes (a programming
// error), as SameShape does.

// GemmDims returns the m, n and k of c = op(a)·op(b) (see Kernels.Gemm),
// panicking unless all three are 2-D and their shapes multiply.
func GemmDims(transA, transB bool, a, b, c *Tensor) (m, n, k int) {
	if a.Rank() != 2 || b.Rank() != 2 || c.Rank() != 2 {
		panic(fmt.Sprintf("tensor: gemm: a %v, b %v, c %v: all must be 2-D", a.Shape(), b.Shape(), c.Shape()))
	}
	m, k = a.Dim(0), a.Dim(1)
	if transA {
		m, k = k, m
	}
	kb, n := b.Dim(0), b.Dim(1)
	if transB {
		kb, n = n, kb
	}
	if kb != k || c.Dim(0) != m || c.Dim(1) != n {
		panic(fmt.Sprintf("tensor: gemm: op(a) %d×%d (a %v, transA %v) times op(b) %d×%d (b %v, transB %v) into c %v",
			m, k, a.Shape(), transA, kb, n, b.Shape(), transB, c.Shape()))
	}
	return m, n, k
}

// BatchNormLayout returns x's shape as batch-norm kernels see it, [n, c,
// hw]: an [N, C, H, W] tensor has hw = H·W, an [N, C] one hw = 1. It
// panics for any other rank.
func BatchNormLayout(op string, x *Tensor) (n, c, hw int) {
	s := x.Shape()
	switch len(s) {
	case 2:
		return s[0], s[1], 1
	case 4:
		return s[0], s[1], s[2] * s[3]
	}
	panic(fmt.Sprintf("tensor: %s: x shape %v, want [N, C, H, W] or [N, C]", op, s))
}

// CrossEntropyDims returns the rows and classes of logits [N, classes],
// panicking unless there is one label per row, each in [0, classes).
func CrossEntropyDims(op string, logits *Tensor, labels []int32) (n, classes int) {
	if logits.Rank() != 2 {
		panic(fmt.Sprintf("tensor: %s: logits of shape %v, want [N, classes]", op, logits.Shape()))
	}
	n, classes = logits.Dim(0), logits.Dim(1)
	if len(labels) != n {
		panic(fmt.Sprintf("tensor: %s: %d labels for %d rows of logits", op, len(labels), n))
	}
	for i, l := range labels {
		if l < 0 || int(l) >= classes {
			panic(fmt.Sprintf("tensor: %s: label %d of row %d outside [0, %d)", op, l, i, classes))
		}
	}
	return n, classes
}

// CheckDropout panics unless p is a probability and in and out have one
// shape with a sample dimension.
func CheckDropout(op string, in, out *Tensor, p float32) {
	if !(p >= 0 && p <= 1) { // also rejects NaN
		panic(fmt.Sprintf("tensor: %s: probability %v outside [0, 1]", op, p))
	}
	SameShape(op, out, in)
	if in.Rank() == 0 {
		panic(fmt.Sprintf("tensor: %s: a scalar has no samples", op))
	}
}
