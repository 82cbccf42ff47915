package comm

import (
	"context"
	"fmt"
	"slices"

	"github.com/pipecast/pipecast/tensor"
)

// SubEndpoint returns the endpoint of a subset of g's ranks, members (in
// increasing order, holding g's own rank): rank i of the subset is
// members[i] of g. Its transfers are g's, addressed through members; its
// collectives span the subset alone, made of g's point-to-point
// transfers, which work over any subset of a transport's ranks. A job of
// data-parallel replicas over one process per device uses it for each
// replica's pipeline and for each device's replicas: two subsets that
// share no pair of ranks, so their tags never meet. Stats are g's: the
// subsets of one rank share its counters.
func SubEndpoint(g Endpoint, members []int) Endpoint {
	me := slices.Index(members, g.Rank())
	if me < 0 {
		panic(fmt.Sprintf("comm: rank %d is not among the members %v of its subset", g.Rank(), members))
	}
	return &subEndpoint{g: g, members: slices.Clone(members), rank: me}
}

type subEndpoint struct {
	g       Endpoint
	members []int
	rank    int
}

func (s *subEndpoint) Rank() int    { return s.rank }
func (s *subEndpoint) Size() int    { return len(s.members) }
func (s *subEndpoint) Stats() Stats { return s.g.Stats() }

// of returns the rank of g behind the subset's rank r.
func (s *subEndpoint) of(r int) (int, error) {
	if r < 0 || r >= len(s.members) {
		return 0, fmt.Errorf("no rank %d among %d", r, len(s.members))
	}
	return s.members[r], nil
}

func (s *subEndpoint) Send(ctx context.Context, to int, tag Tag, t *tensor.Tensor) error {
	g, err := s.of(to)
	if err != nil {
		return err
	}
	return s.g.Send(ctx, g, tag, t)
}

func (s *subEndpoint) Probe(ctx context.Context, from int, tag Tag) error {
	g, err := s.of(from)
	if err != nil {
		return err
	}
	return s.g.Probe(ctx, g, tag)
}

func (s *subEndpoint) Recv(ctx context.Context, from int, tag Tag, dst *tensor.Tensor) error {
	g, err := s.of(from)
	if err != nil {
		return err
	}
	return s.g.Recv(ctx, g, tag, dst)
}

// AllGather sends local to every other member and receives every
// member's contribution that dsts expects.
func (s *subEndpoint) AllGather(ctx context.Context, tag Tag, local *tensor.Tensor, dsts []*tensor.Tensor) error {
	if len(dsts) != len(s.members) {
		return fmt.Errorf("all-gather %v: %d destinations for %d ranks", tag, len(dsts), len(s.members))
	}
	if local != nil {
		for r := range s.members {
			if r != s.rank {
				if err := s.Send(ctx, r, tag, local); err != nil {
					return err
				}
			}
		}
	}
	for r, dst := range dsts {
		if r != s.rank && dst != nil {
			if err := s.Recv(ctx, r, tag, dst); err != nil {
				return err
			}
		}
	}
	return nil
}

// AllToAll sends parts[r] to member r and receives what dsts expects.
func (s *subEndpoint) AllToAll(ctx context.Context, tag Tag, parts []*tensor.Tensor, dsts []*tensor.Tensor) error {
	if len(parts) != len(s.members) || len(dsts) != len(s.members) {
		return fmt.Errorf("all-to-all %v: %d parts and %d destinations for %d ranks", tag, len(parts), len(dsts), len(s.members))
	}
	for r, p := range parts {
		if r != s.rank && p != nil {
			if err := s.Send(ctx, r, tag, p); err != nil {
				return err
			}
		}
	}
	if p, dst := parts[s.rank], dsts[s.rank]; p != nil && dst != nil {
		dst.Device().Copy(dst, p)
	}
	for r, dst := range dsts {
		if r != s.rank && dst != nil {
			if err := s.Recv(ctx, r, tag, dst); err != nil {
				return err
			}
		}
	}
	return nil
}
