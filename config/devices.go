package config

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/profiler"
)

// Devices that differ: a pipeline's devices may run different thread
// counts (Config.DeviceThreads), compute at measured relative speeds
// (Config.Speeds) and one of them may be an injected straggler. This file
// owns what follows from that: each device's threads and slowdown, and
// the partition that gives slower devices less work (BalanceSpeed).

// ParseThreads parses --threads: one count for every device ("2"), or
// one per pipeline device ("2,1"; a replica's device k takes the k-th).
// 0 is the default (the cores shared among the devices) and only alone.
func ParseThreads(s string) (threads int, perDevice []int, err error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil, nil
	}
	parts := strings.Split(s, ",")
	out := make([]int, len(parts))
	for i, p := range parts {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		switch {
		case err != nil:
			return 0, nil, fmt.Errorf("threads %s: want a thread count, or one per device (2,1)", s)
		case n < 0 || (n == 0 && len(parts) > 1):
			return 0, nil, fmt.Errorf("threads %s: need at least 1 thread a device (or 0 alone for the default)", s)
		}
		out[i] = n
	}
	if len(out) == 1 {
		return out[0], nil, nil
	}
	return 0, out, nil
}

// normaliseDevices folds per-device threads that are all alike into
// Threads, and otherwise sets Threads to the largest: the reference
// device's, whose speed is 1 (see Speeds).
func (c *Config) normaliseDevices() {
	if len(c.DeviceThreads) == 0 {
		c.DeviceThreads = nil
		return
	}
	c.Threads = slices.Max(c.DeviceThreads)
	if slices.Min(c.DeviceThreads) == c.Threads {
		c.DeviceThreads = nil
	}
}

// ThreadsOf returns the worker threads of job device d (pipeline device
// d mod K).
func (c Config) ThreadsOf(d int) int {
	if t := c.DeviceThreads; len(t) > 0 {
		return t[d%len(t)]
	}
	return c.Threads
}

// TotalThreads returns the worker threads of all the job's devices.
func (c Config) TotalThreads() int {
	n := 0
	for d := range c.JobDevices() {
		n += c.ThreadsOf(d)
	}
	return n
}

// Slowdown returns how many times as long job device d computes as the
// reference device (a device of Threads threads, at full speed): the
// inverse of its pipeline device's speed, times the straggler's factor
// when d is the straggler.
func (c Config) Slowdown(d int) float64 {
	return profiler.DeviceSlowdown(c.Speeds, c.Straggler.Device, c.Straggler.Factor, d)
}

// checkDevices checks the per-device lists against K.
func (c Config) checkDevices() error {
	k := c.Schedule.Devices
	if t := c.DeviceThreads; len(t) > 0 {
		if len(t) != k {
			return invalid(RuleDeviceList, "threads", profiler.FormatThreads(t),
				"K=%d: threads %s gives %d devices' threads", k, profiler.FormatThreads(t), len(t))
		}
		if slices.Min(t) < 1 {
			return invalid(RuleCounts, "threads", profiler.FormatThreads(t), "threads %s: need at least 1 a device", profiler.FormatThreads(t))
		}
	}
	if s := c.Speeds; len(s) > 0 {
		if len(s) != k {
			return invalid(RuleDeviceList, "speeds", fmt.Sprint(s), "K=%d: speeds of %d devices given", k, len(s))
		}
		for _, v := range s {
			if !(v > 0) || math.IsInf(v, 0) {
				return invalid(RuleCounts, "speeds", fmt.Sprint(s), "speed %v: want a positive, finite speed", v)
			}
		}
	}
	return nil
}

// speedPartition is the partition by speed of blocks of the given
// times into stages: stage s, holding blocks [lo, hi), costs their times
// times the slowdown of the device that holds it (the slowest of its
// replicas: the straggler, a job device, slows its own replica's stage,
// and that replica sets the step). Among the splits of the least
// largest cost it takes the one of most even times.
func (c Config) speedPartition(times []float64, stages int) ([]int, error) {
	prefix := make([]float64, len(times)+1)
	for i, t := range times {
		prefix[i+1] = prefix[i] + t
	}
	sum := func(lo, hi int) float64 { return prefix[hi] - prefix[lo] }
	slow := make([]float64, max(c.Schedule.Devices, 1))
	for d := range c.JobDevices() {
		k := d % len(slow)
		slow[k] = max(slow[k], c.Slowdown(d))
	}
	cost := func(s, lo, hi int) float64 { return sum(lo, hi) * slow[c.Schedule.Owner(s)] }
	return models.PartitionBy(len(times), stages, cost, sum)
}
