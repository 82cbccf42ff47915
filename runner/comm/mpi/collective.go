//go:build mpi

package mpi

import (
	"context"
	"errors"
	"fmt"
	"unsafe"

	"github.com/pipecast/pipecast/runner/comm"
	"github.com/pipecast/pipecast/tensor"
)

// A collective runs in two phases. First every rank's header (see header)
// goes to every rank with MPI_Iallgather, the same call whichever
// collective a rank called, so that ranks whose calls differ find out
// instead of hanging or corrupting each other's buffers. From the headers
// every rank works out alike which pieces move: a piece from p to q moves
// when both called the same collective with the same tag, neither failed
// its argument checks, and p sends as many elements as q expects. Then,
// when every rank called AllGather and every piece moves as called, the
// data go with MPI_Iallgatherv in place; otherwise with MPI_Ialltoallv,
// only the moving pieces having non-zero counts; when nothing moves at
// all, there is no second phase. Pieces move between the tensors' own
// memory (see op.place). A rank's call returns when both phases are done;
// a rank whose arguments are wrong returns at once and takes part in the
// phases in the background, so that the others learn why.

// collective is one rank's call of a collective.
type collective struct {
	g    *group
	kind collKind
	tag  comm.Tag
	// err is what the call returns once its op has finished: the
	// pieces that did not match.
	err error
}

func (c *collective) wrap(err error) error { return fmt.Errorf("%s, %v: %w", c.kind, c.tag, err) }

// AllGather sends local to every other rank and receives every other
// rank's contribution into dsts.
func (g *group) AllGather(ctx context.Context, tag comm.Tag, local *tensor.Tensor, dsts []*tensor.Tensor) error {
	c := &collective{g: g, kind: allGather, tag: tag}
	if err := g.usable(); err != nil {
		return c.wrap(err)
	}
	h := c.header()
	var bad error
	switch {
	case len(dsts) != g.size:
		bad = fmt.Errorf("%d destinations for %d ranks", len(dsts), g.size)
	case dsts[g.rank] != nil:
		bad = fmt.Errorf("dsts[%d] is this rank's own and must be nil", g.rank)
	default:
		for k := range g.size {
			if local != nil && k != g.rank {
				h.send[k] = int64(local.Len())
			}
			if dsts[k] != nil {
				h.expect[k] = int64(dsts[k].Len())
			}
		}
	}
	return c.run(ctx, h, bad, func(int) *tensor.Tensor { return local }, dsts)
}

// AllToAll sends parts[k] to rank k, copies parts[rank] into dsts[rank]
// locally (not counted as moved), and receives what every other rank
// sends this one into dsts.
func (g *group) AllToAll(ctx context.Context, tag comm.Tag, parts []*tensor.Tensor, dsts []*tensor.Tensor) error {
	c := &collective{g: g, kind: allToAll, tag: tag}
	if err := g.usable(); err != nil {
		return c.wrap(err)
	}
	h := c.header()
	var bad error
	switch own, dst := at(parts, g.rank), at(dsts, g.rank); {
	case len(parts) != g.size || len(dsts) != g.size:
		bad = fmt.Errorf("%d parts and %d destinations for %d ranks", len(parts), len(dsts), g.size)
	case (own == nil) != (dst == nil):
		bad = fmt.Errorf("%w: parts[%d] and dsts[%d] must both be nil or both be set", comm.ErrMismatch, g.rank, g.rank)
	case own != nil && own.Len() != dst.Len():
		bad = fmt.Errorf("%w: parts[%d] holds %d elements, dsts[%d] %d", comm.ErrMismatch, g.rank, own.Len(), g.rank, dst.Len())
	default:
		if own != nil {
			dst.Device().CopyFrom(dst, own)
		}
		for k := range g.size {
			if parts[k] != nil && k != g.rank {
				h.send[k] = int64(parts[k].Len())
			}
			if dsts[k] != nil && k != g.rank {
				h.expect[k] = int64(dsts[k].Len())
			}
		}
	}
	return c.run(ctx, h, bad, func(k int) *tensor.Tensor { return parts[k] }, dsts)
}

func at(ts []*tensor.Tensor, i int) *tensor.Tensor {
	if i < len(ts) {
		return ts[i]
	}
	return nil
}

// header returns this rank's header with nothing sent or expected yet.
func (c *collective) header() *header {
	h := &header{kind: c.kind, tag: c.tag, send: make([]int64, c.g.size), expect: make([]int64, c.g.size)}
	for k := range h.send {
		h.send[k], h.expect[k] = -1, -1
	}
	return h
}

// run queues the collective's op and waits for it; with bad set (wrong
// arguments) it returns bad at once and lets the op tell the others.
func (c *collective) run(ctx context.Context, h *header, bad error, part func(k int) *tensor.Tensor, dsts []*tensor.Tensor) error {
	g := c.g
	if bad != nil {
		h.failed, h.mismatch = bad.Error(), errors.Is(bad, comm.ErrMismatch)
	}
	n := headerSize(g.size)
	mine, all := make([]byte, n), make([]byte, n*g.size)
	h.encode(mine)
	o := &op{what: fmt.Sprintf("%s, %v", c.kind, c.tag), g: g}
	if bad == nil {
		// The data phase may come after the call has returned (its
		// context ended): the tensors stay alive until then.
		for k := range g.size {
			if h.send[k] >= 1 {
				o.hold(part(k))
			}
			if h.expect[k] >= 1 {
				o.hold(dsts[k])
			}
		}
	}
	o.pin(unsafe.Pointer(&mine[0]))
	o.pin(unsafe.Pointer(&all[0]))
	o.next = func() error {
		o.next = func() error {
			hs := make([]header, g.size)
			for p := range hs {
				var err error
				if hs[p], err = decodeHeader(all[p*n:], g.size); err != nil {
					return err
				}
			}
			return c.move(o, hs, bad == nil, part, dsts)
		}
		return g.data.iallgather(&o.reqs, unsafe.Pointer(&mine[0]), n, unsafe.Pointer(&all[0]))
	}
	g.coll.ops = append(g.coll.ops, o)
	if bad != nil {
		g.progress(nil)
		return c.wrap(bad)
	}
	if err := g.wait(ctx, o); err != nil {
		return c.wrap(err)
	}
	if c.err != nil {
		return c.wrap(c.err)
	}
	return nil
}

// moves returns the elements that move from rank p to rank q (0 for
// none), as every rank works it out from the headers.
func moves(hs []header, p, q int) int {
	a, b := &hs[p], &hs[q]
	if p == q || !a.sameCall(b) || a.failed != "" || b.failed != "" {
		return 0
	}
	if n := a.send[q]; n >= 1 && n == b.expect[p] {
		return int(n)
	}
	return 0
}

// move starts the data phase of op o from the headers: it records in
// c.err why pieces for this rank do not move, and starts the MPI call
// that moves the rest. ok is false on a rank whose arguments were wrong:
// nothing moves to or from it, and its part and dsts are not read.
func (c *collective) move(o *op, hs []header, ok bool, part func(k int) *tensor.Tensor, dsts []*tensor.Tensor) error {
	g, me := c.g, c.g.rank
	src, dst := part, func(k int) *tensor.Tensor { return dsts[k] }
	if ok {
		c.err = mismatch(hs, me, dsts)
	} else {
		src = func(int) *tensor.Tensor { return nil }
		dst = src
	}
	// any: something moves; exact: every piece moves as called.
	any, exact, gather := false, true, true
	for p := range hs {
		gather = gather && hs[p].kind == allGather
		for q := range hs {
			if p == q {
				continue
			}
			n := int64(moves(hs, p, q))
			any = any || n > 0
			exact = exact && n == max(hs[p].send[q], 0) && n == max(hs[q].expect[p], 0)
		}
	}
	if !any {
		return nil
	}
	if gather && exact {
		// Every rank's contribution goes to every other: MPI_Iallgatherv
		// with each rank's piece in place at its own displacement.
		ps := make([]piece, g.size)
		counts := make([]int32, g.size)
		for p := range ps {
			if p == me {
				ps[p] = piece{t: src(p), n: moves(hs, me, (me+1)%g.size), in: true}
				o.sent = int64(ps[p].n) * tensor.BytesPerElement * int64(g.size-1)
			} else {
				ps[p] = piece{t: dst(p), n: moves(hs, p, me)}
				o.received += int64(ps[p].n) * tensor.BytesPerElement
				if ps[p].n > 0 {
					o.messages++
				}
			}
			counts[p] = int32(ps[p].n)
		}
		base, displs := o.place(ps)
		o.pin(unsafe.Pointer(&counts[0]))
		o.pin(unsafe.Pointer(&displs[0]))
		return g.data.iallgathervInPlace(&o.reqs, base, counts, displs, floats)
	}
	sends, recvs := make([]piece, g.size), make([]piece, g.size)
	scounts, rcounts := make([]int32, g.size), make([]int32, g.size)
	for k := range g.size {
		if n := moves(hs, me, k); n > 0 {
			sends[k] = piece{t: src(k), n: n, in: true}
			scounts[k] = int32(n)
			o.sent += int64(n) * tensor.BytesPerElement
		}
		if n := moves(hs, k, me); n > 0 {
			recvs[k] = piece{t: dst(k), n: n}
			rcounts[k] = int32(n)
			o.received += int64(n) * tensor.BytesPerElement
			o.messages++
		}
	}
	sbase, sdispls := o.place(sends)
	rbase, rdispls := o.place(recvs)
	for _, s := range [][]int32{scounts, sdispls, rcounts, rdispls} {
		o.pin(unsafe.Pointer(&s[0]))
	}
	return g.data.ialltoallv(&o.reqs, sbase, scounts, sdispls, rbase, rcounts, rdispls, floats)
}

// mismatch returns why the first piece for rank me that should arrive,
// or should not, does not, as the in-process transport reports it.
func mismatch(hs []header, me int, dsts []*tensor.Tensor) error {
	for p := range hs {
		if p == me {
			continue
		}
		h, dst := &hs[p], dsts[p]
		n := h.send[me]
		switch {
		case h.failed != "":
			return fmt.Errorf("rank %d failed its side: %w", p, &remoteError{text: h.failed, mismatch: h.mismatch})
		case !h.sameCall(&hs[me]):
			return fmt.Errorf("%w: rank %d called %s, %v", comm.ErrMismatch, p, h.kind, h.tag)
		case n < 0 && dst != nil:
			return fmt.Errorf("%w: rank %d sent nothing, dsts[%d] expects %d elements", comm.ErrMismatch, p, p, dst.Len())
		case n >= 0 && dst == nil:
			return fmt.Errorf("%w: rank %d sent %d elements, dsts[%d] is nil", comm.ErrMismatch, p, n, p)
		case n >= 0 && int(n) != dst.Len():
			return fmt.Errorf("piece from rank %d: %w: %d elements sent, destination %v holds %d", p, comm.ErrMismatch, n, dst.Shape(), dst.Len())
		}
	}
	return nil
}
