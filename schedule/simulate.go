package schedule

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Timeline is a simulated (or measured) run of a program: when each op of
// each device started and ended, in the cost function's unit.
type Timeline struct {
	// Program is the program the timeline runs.
	Program *Program
	// Start[k][i] and End[k][i] bound op i of device k.
	Start, End [][]float64
	// Makespan is when the last op ends: the step time.
	Makespan float64
	// Busy[k] is the total time device k spends inside its ops. A Recv's
	// wait for its Send and a device's wait for the others to reach a
	// collective are idle, not busy; a collective is busy from its common
	// start to its common end.
	Busy []float64
}

// Idle returns the time device k spends outside its ops during the step.
func (t *Timeline) Idle(k int) float64 { return t.Makespan - t.Busy[k] }

// BubbleFraction returns the fraction of device time that is idle: the
// sum of the devices' idle times over K times the makespan (0 for an
// empty step).
func (t *Timeline) BubbleFraction() float64 {
	if t.Makespan == 0 || len(t.Busy) == 0 {
		return 0
	}
	var busy float64
	for _, b := range t.Busy {
		busy += b
	}
	return 1 - busy/(float64(len(t.Busy))*t.Makespan)
}

// transferKey identifies a Send and the Recv that matches it.
type transferKey struct {
	from, to     int
	what         Payload
	stage, micro int
}

// sendKey returns the key of Send op o on device k; recvKey that of Recv op
// o on device k.
func sendKey(k int, o Op) transferKey {
	return transferKey{from: k, to: o.Peer, what: o.What, stage: o.Stage, micro: o.Micro}
}

func recvKey(k int, o Op) transferKey {
	return transferKey{from: o.Peer, to: k, what: o.What, stage: o.Stage, micro: o.Micro}
}

func (k transferKey) String() string {
	return fmt.Sprintf("%s %d.%d from device %d to device %d", k.what, k.stage, k.micro, k.from, k.to)
}

// Simulate runs program p as a discrete-event simulation in which op o of
// device k takes cost(k, o) ≥ 0: each device runs its ops in order, a Recv
// starts no earlier than the end of its matching Send (the i-th Recv of a
// key matches the i-th Send of that key), and a collective starts on every
// device of its group (Program.Groups) when the last device of the group
// reaches it and ends on each device after that device's own cost: a rank
// leaves once the pieces it receives are in, as the transport's
// collectives let it. The result depends only on p and cost, never on the
// order in which the simulator visits devices.
//
// Simulate fails if a cost is negative or not finite, if a collective
// names no group or a group without its device, if the devices of a group
// disagree on the kind of a collective, or if the program deadlocks; the
// deadlock error names every blocked device and the op it waits in. It
// runs in time linear in the number of ops and groups' devices.
func Simulate(p *Program, cost func(device int, op Op) float64) (*Timeline, error) {
	return simulate(p, func(k, i int) float64 { return cost(k, p.Devices[k][i]) })
}

// simulate is Simulate with each op's cost given by its position: cost(k,
// i) is op i of device k's.
func simulate(p *Program, cost func(device, op int) float64) (*Timeline, error) {
	if p == nil || len(p.Devices) == 0 {
		return nil, errors.New("simulate: empty program")
	}
	K := len(p.Devices)
	s := &simulation{
		p:       p,
		cost:    cost,
		t:       &Timeline{Program: p, Start: make([][]float64, K), End: make([][]float64, K), Busy: make([]float64, K)},
		next:    make([]int, K),
		clock:   make([]float64, K),
		sent:    make(map[transferKey][]float64),
		taken:   make(map[transferKey]int),
		waiting: make(map[transferKey]int),
		ncoll:   make([]int, K),
		arrived: make([][]int, len(p.Groups)),
		inColl:  make([]bool, K),
	}
	for k, ops := range p.Devices {
		s.t.Start[k] = make([]float64, len(ops))
		s.t.End[k] = make([]float64, len(ops))
		s.ready = append(s.ready, k)
	}
	for len(s.ready) > 0 {
		k := s.ready[0]
		s.ready = s.ready[1:]
		if err := s.advance(k); err != nil {
			return nil, err
		}
	}
	if err := s.deadlock(); err != nil {
		return nil, err
	}
	for k := range K {
		s.t.Makespan = math.Max(s.t.Makespan, s.clock[k])
	}
	return s.t, nil
}

// simulation is the state of one Simulate call.
type simulation struct {
	p     *Program
	cost  func(device, op int) float64
	t     *Timeline
	next  []int     // next[k] is the index of device k's next op
	clock []float64 // clock[k] is when device k is free
	ready []int     // devices that may be able to advance

	sent    map[transferKey][]float64 // end times of the sends of a key, in order
	taken   map[transferKey]int       // how many of them recvs have matched
	waiting map[transferKey]int       // the device blocked in a recv of a key

	ncoll   []int   // ncoll[k] is how many collectives device k has passed
	arrived [][]int // arrived[g]: devices waiting in group g's current collective
	inColl  []bool  // inColl[k]: device k is in an arrived list
}

// opCost returns the cost of op i of device k, checked.
func (s *simulation) opCost(k, i int) (float64, error) {
	o := s.p.Devices[k][i]
	c := s.cost(k, i)
	if c < 0 || math.IsNaN(c) || math.IsInf(c, 0) {
		return 0, fmt.Errorf("simulate: device %d op %d (%v): cost %v, want a finite value ≥ 0", k, i, o, c)
	}
	return c, nil
}

// run records op i of device k as running from start to end.
func (s *simulation) run(k, i int, start, end float64) {
	s.t.Start[k][i], s.t.End[k][i] = start, end
	s.t.Busy[k] += end - start
	s.clock[k] = end
	s.next[k] = i + 1
}

// advance runs device k's ops until it finishes or blocks.
func (s *simulation) advance(k int) error {
	ops := s.p.Devices[k]
	for s.next[k] < len(ops) {
		i := s.next[k]
		o := ops[i]
		start := s.clock[k]
		switch {
		case o.Kind == Recv:
			key := recvKey(k, o)
			n := s.taken[key]
			if n >= len(s.sent[key]) {
				s.waiting[key] = k
				return nil
			}
			s.taken[key] = n + 1
			start = math.Max(start, s.sent[key][n])
		case o.Kind.Collective():
			if s.inColl[k] {
				return nil // already counted; a spurious wake-up
			}
			members := s.p.GroupOf(o)
			if !slices.Contains(members, k) {
				return fmt.Errorf("simulate: device %d op %d (%v): group %d is %v, want a group of %d of 0..%d",
					k, i, o, o.Group, members, k, len(s.p.Groups)-1)
			}
			s.inColl[k] = true
			s.arrived[o.Group] = append(s.arrived[o.Group], k)
			if len(s.arrived[o.Group]) < len(members) {
				return nil
			}
			return s.collective(o.Group)
		}
		c, err := s.opCost(k, i)
		if err != nil {
			return err
		}
		s.run(k, i, start, start+c)
		if o.Kind == Send {
			key := sendKey(k, o)
			s.sent[key] = append(s.sent[key], start+c)
			if w, ok := s.waiting[key]; ok {
				delete(s.waiting, key)
				s.ready = append(s.ready, w)
			}
		}
	}
	return nil
}

// collective runs the collective every device of group g has just
// reached, and makes every device ready to go on.
func (s *simulation) collective(g int) error {
	arrived := s.arrived[g]
	first := arrived[0]
	want := s.p.Devices[first][s.next[first]]
	var start float64
	costs := make([]float64, len(arrived))
	for i, k := range arrived {
		o := s.p.Devices[k][s.next[k]]
		if o.Kind != want.Kind {
			return fmt.Errorf("simulate: collective %d: device %d runs %s but device %d runs %s",
				s.ncoll[k], first, want.Kind, k, o.Kind)
		}
		ck, err := s.opCost(k, s.next[k])
		if err != nil {
			return err
		}
		start = math.Max(start, s.clock[k])
		costs[i] = ck
	}
	for i, k := range arrived {
		s.run(k, s.next[k], start, start+costs[i])
		s.ncoll[k]++
		s.inColl[k] = false
	}
	// Resume in device order so the visiting order stays deterministic.
	for k := range s.p.Devices {
		s.ready = append(s.ready, k)
	}
	s.arrived[g] = arrived[:0]
	return nil
}

// deadlock returns an error naming every device that has ops left, or nil
// when all finished.
func (s *simulation) deadlock() error {
	var blocked []string
	for k, ops := range s.p.Devices {
		i := s.next[k]
		if i == len(ops) {
			continue
		}
		o := ops[i]
		why := ""
		switch {
		case o.Kind == Recv:
			why = fmt.Sprintf(" for the send of %s", recvKey(k, o))
		case o.Kind.Collective():
			// A device blocks in a collective only after advance checked
			// its group.
			why = fmt.Sprintf(", which %d of %d devices reached", len(s.arrived[o.Group]), len(s.p.GroupOf(o)))
		}
		blocked = append(blocked, fmt.Sprintf("device %d waits in op %d (%v)%s", k, i, o, why))
	}
	if len(blocked) == 0 {
		return nil
	}
	return fmt.Errorf("simulate: deadlock: %s", strings.Join(blocked, "; "))
}
