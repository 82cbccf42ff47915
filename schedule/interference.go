package schedule

import (
	"errors"
	"math"
)

// Concurrency returns, for every op of the timeline, how many devices
// computed on average while it ran, itself included: 1 plus, for each
// other device, the fraction of the op's span that device spent inside
// compute ops. An op of zero length gets 1, and so does every op of a
// device that never overlaps another's compute. Transfers and
// collectives get a value too, though interference is applied to
// compute ops only (see SimulateInterference).
func Concurrency(t *Timeline) [][]float64 {
	K := len(t.Program.Devices)
	// busy[j] lists device j's compute spans, in order (a device runs
	// one op at a time, so they never overlap each other).
	busy := make([][][2]float64, K)
	for j, ops := range t.Program.Devices {
		for i, o := range ops {
			if o.Kind.Computes() && t.End[j][i] > t.Start[j][i] {
				busy[j] = append(busy[j], [2]float64{t.Start[j][i], t.End[j][i]})
			}
		}
	}
	out := make([][]float64, K)
	for k, ops := range t.Program.Devices {
		out[k] = make([]float64, len(ops))
		for i := range ops {
			out[k][i] = 1
		}
		for j := range K {
			if j == k || len(busy[j]) == 0 {
				continue
			}
			// Both lists are in time order: one sweep over j's spans.
			lo := 0
			for i := range ops {
				s, e := t.Start[k][i], t.End[k][i]
				if e <= s {
					continue
				}
				for lo < len(busy[j]) && busy[j][lo][1] <= s {
					lo++
				}
				var shared float64
				for m := lo; m < len(busy[j]) && busy[j][m][0] < e; m++ {
					shared += math.Min(e, busy[j][m][1]) - math.Max(s, busy[j][m][0])
				}
				out[k][i] += shared / (e - s)
			}
		}
	}
	return out
}

// SimulateInterference simulates p as Simulate does, with each compute op
// slowed by the interference of the devices computing at the same time:
// op o of device k takes cost(k, o)·slowdown(n), n its Concurrency in the
// timeline. Since the slowdowns move the ops, which changes what
// overlaps, it simulates again from the previous timeline's concurrency
// until the makespan moves by less than a part in 10⁶, at most rounds
// times. slowdown(1) must be 1: with devices that never compute at the
// same time the result is Simulate's.
func SimulateInterference(p *Program, cost func(int, Op) float64, slowdown func(n float64) float64, rounds int) (*Timeline, error) {
	if rounds < 1 {
		return nil, errors.New("simulate with interference: need at least one round")
	}
	t, err := Simulate(p, cost)
	if err != nil {
		return nil, err
	}
	for range rounds {
		conc := Concurrency(t)
		next, err := simulate(p, func(k, i int) float64 {
			o := p.Devices[k][i]
			c := cost(k, o)
			if !o.Kind.Computes() {
				return c
			}
			return c * slowdown(conc[k][i])
		})
		if err != nil {
			return nil, err
		}
		done := math.Abs(next.Makespan-t.Makespan) <= 1e-6*math.Max(t.Makespan, 1e-300)
		t = next
		if done {
			break
		}
	}
	return t, nil
}
