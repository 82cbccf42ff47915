package config

import (
	"fmt"
	"strconv"
	"strings"
)

// Straggler is one device whose compute runs Factor times as long as it
// would (Factor 0 or 1: none), for studies of synchronous training with a
// slow worker.
type Straggler struct {
	Device int
	Factor float64
}

// Active reports whether the straggler slows anything.
func (s Straggler) Active() bool { return s.Factor > 1 }

// FailAt makes device Device fail at the start of step Step.
type FailAt struct {
	Device, Step int
}

// ParseStraggler parses DEVICE:FACTOR ("1:1.5"; "" for none).
func ParseStraggler(s string) (Straggler, error) {
	if s == "" {
		return Straggler{}, nil
	}
	d, f, ok := strings.Cut(s, ":")
	dev, err1 := strconv.Atoi(d)
	factor, err2 := strconv.ParseFloat(f, 64)
	if !ok || err1 != nil || err2 != nil || dev < 0 || !(factor >= 1) || factor > 1000 {
		return Straggler{}, fmt.Errorf("straggler %q: want DEVICE:FACTOR, a device index ≥ 0 and a factor from 1 to 1000", s)
	}
	return Straggler{Device: dev, Factor: factor}, nil
}

// ParseFailAt parses DEVICE:STEP ("1:3"; "" for none).
func ParseFailAt(s string) (*FailAt, error) {
	if s == "" {
		return nil, nil
	}
	d, st, ok := strings.Cut(s, ":")
	dev, err1 := strconv.Atoi(d)
	step, err2 := strconv.Atoi(st)
	if !ok || err1 != nil || err2 != nil || dev < 0 || step < 0 {
		return nil, fmt.Errorf("fail %q: want DEVICE:STEP, a device index and a step ≥ 0", s)
	}
	return &FailAt{Device: dev, Step: step}, nil
}
