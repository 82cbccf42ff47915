//go:build mpi

package mpi

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"

	"github.com/pipecast/pipecast/runner/comm"
	"github.com/pipecast/pipecast/tensor"
)

// collKind says which collective a rank called.
type collKind uint8

const (
	allGather collKind = iota + 1
	allToAll
)

func (k collKind) String() string {
	switch k {
	case allGather:
		return "allgather"
	case allToAll:
		return "alltoall"
	default:
		return fmt.Sprintf("collective %d", uint8(k))
	}
}

// header is what a rank tells every other rank at the start of a
// collective, before any data move: what it called, whether its own
// arguments were wrong, and which pieces it sends to and expects from
// each rank. Every rank receives every header, so every rank can tell
// alike which pieces move.
type header struct {
	kind     collKind
	tag      comm.Tag // Kind cut to maxKind bytes; kindHash compares it whole
	kindHash uint64
	failed   string // the error of a rank whose arguments were wrong
	mismatch bool   // failed wraps comm.ErrMismatch
	send     []int64
	expect   []int64 // elements to and from each rank; -1 for nothing
}

const (
	headerMagic = 0x70637374 // "pcst"
	maxKind     = 64
	maxFailed   = 192
	headerFixed = 48 + maxKind + maxFailed
)

func headerSize(size int) int { return headerFixed + 16*size }

// encode writes h into b, which holds headerSize(len(h.send)) bytes.
func (h *header) encode(b []byte) {
	le := binary.LittleEndian
	kind, failed := cut(h.tag.Kind, maxKind), cut(h.failed, maxFailed)
	le.PutUint32(b[0:], headerMagic)
	b[4], b[5] = byte(h.kind), byte(len(kind))
	le.PutUint16(b[6:], uint16(len(failed)))
	if h.mismatch {
		b[8] = 1
	}
	le.PutUint64(b[16:], uint64(h.tag.Step))
	le.PutUint64(b[24:], uint64(h.tag.Stage))
	le.PutUint64(b[32:], uint64(h.tag.Micro))
	le.PutUint64(b[40:], tagHash(comm.Tag{Kind: h.tag.Kind}))
	copy(b[48:], kind)
	copy(b[48+maxKind:], failed)
	for k := range h.send {
		le.PutUint64(b[headerFixed+16*k:], uint64(h.send[k]))
		le.PutUint64(b[headerFixed+16*k+8:], uint64(h.expect[k]))
	}
}

// decodeHeader reads a header of a collective of size ranks.
func decodeHeader(b []byte, size int) (header, error) {
	le := binary.LittleEndian
	if le.Uint32(b) != headerMagic {
		return header{}, fmt.Errorf("%w: a rank's collective header is garbled", comm.ErrMismatch)
	}
	h := header{kind: collKind(b[4]), kindHash: le.Uint64(b[40:]), mismatch: b[8] == 1}
	h.tag = comm.Tag{
		Step: int(le.Uint64(b[16:])), Kind: string(b[48 : 48+int(b[5])]),
		Stage: int(le.Uint64(b[24:])), Micro: int(le.Uint64(b[32:])),
	}
	h.failed = string(b[48+maxKind : 48+maxKind+int(le.Uint16(b[6:]))])
	h.send, h.expect = make([]int64, size), make([]int64, size)
	for k := range size {
		h.send[k] = int64(le.Uint64(b[headerFixed+16*k:]))
		h.expect[k] = int64(le.Uint64(b[headerFixed+16*k+8:]))
	}
	return h, nil
}

// cut returns s's first n bytes at most.
func cut(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// sameCall reports whether h and o called the same collective with the
// same tag.
func (h *header) sameCall(o *header) bool {
	return h.kind == o.kind && h.kindHash == o.kindHash && h.tag == o.tag
}

// remoteError is the error another rank's arguments had, as its header
// tells it.
type remoteError struct {
	text     string
	mismatch bool
}

func (e *remoteError) Error() string { return e.text }

// Is reports comm.ErrMismatch for a rank whose own error was one.
func (e *remoteError) Is(target error) bool { return e.mismatch && target == comm.ErrMismatch }

// piece is one tensor of a v-collective's buffer: n elements that the
// library reads (in) or writes.
type piece struct {
	t  *tensor.Tensor
	n  int
	in bool
}

// place lays pieces out for a v-collective, which addresses every
// piece as a displacement in elements from one base address; o holds
// their tensors already. The pieces are used in place (pinned) when
// their memory is
// host memory within ±2³¹ elements of the lowest piece; a piece of
// another backend is staged in a buffer of its own (downloaded first if
// in, uploaded when o completes if not); pieces too far apart are all
// staged in one buffer. Pieces with n = 0 get displacement 0.
func (o *op) place(ps []piece) (base unsafe.Pointer, displs []int32) {
	displs = make([]int32, len(ps))
	bufs := make([][]float32, len(ps))
	var lo, hi uintptr
	first := true
	for i, p := range ps {
		if p.n == 0 {
			continue
		}
		buf, alias := hostFloats(p.t)
		switch {
		case alias:
		case p.in:
			p.t.Device().Download(buf, p.t)
		default:
			t := p.t
			o.after(func() { t.Device().Upload(t, buf) })
		}
		bufs[i] = buf
		a := uintptr(unsafe.Pointer(&buf[0]))
		if first || a < lo {
			lo, base = a, unsafe.Pointer(&buf[0])
		}
		hi = max(hi, a)
		first = false
	}
	if first {
		return nil, displs
	}
	if (hi-lo)/tensor.BytesPerElement <= math.MaxInt32 {
		for i, buf := range bufs {
			if buf != nil {
				o.pin(unsafe.Pointer(&buf[0]))
				displs[i] = int32((uintptr(unsafe.Pointer(&buf[0])) - lo) / tensor.BytesPerElement)
			}
		}
		return base, displs
	}
	total := 0
	for _, p := range ps {
		total += p.n
	}
	stage := make([]float32, total)
	at := 0
	for i, p := range ps {
		if p.n == 0 {
			continue
		}
		part, buf := stage[at:at+p.n], bufs[i]
		if p.in {
			copy(part, buf)
		} else {
			o.after(func() { copy(buf, part) })
		}
		displs[i] = int32(at)
		at += p.n
	}
	o.pin(unsafe.Pointer(&stage[0]))
	return unsafe.Pointer(&stage[0]), displs
}

// after adds f to what runs when o completes; the copies out of staging
// run before the uploads of the pieces they fill.
func (o *op) after(f func()) {
	prev := o.done
	if prev == nil {
		o.done = f
		return
	}
	o.done = func() { f(); prev() }
}
