package predictor

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/schedule"
)

// scaledOps are the op kinds whose price the fitted scales correct: the
// ops priced from the block, loss and update fits (schedule's Fitted).
var scaledOps = opNamesWhere(schedule.OpKind.Fitted)

// blockOps are the op kinds that run their stage's blocks in turn.
var blockOps = opNamesWhere(schedule.OpKind.RunsBlocks)

// opNamesWhere returns the names of the op kinds for which is holds, in
// the order of the kinds.
func opNamesWhere(is func(schedule.OpKind) bool) []string {
	var out []string
	for _, k := range schedule.OpKinds() {
		if is(k) {
			out = append(out, k.String())
		}
	}
	return out
}

// opScale is one op kind's fitted scale: the median ratio at each
// micro-batch size the records measured, in increasing order of size,
// and the median over every record.
type opScale struct {
	micro []float64 // samples per micro-batch, B/M
	ratio []float64
	all   float64
}

// at returns the scale at micro-batch size m: the fitted ratio where m
// was measured, interpolated linearly in log m between measured sizes,
// and the median over all sizes outside them, where how the ratio goes
// on changing cannot be told from the data.
func (s opScale) at(m float64) float64 {
	n := len(s.micro)
	switch {
	case n == 0:
		return 1
	case m < s.micro[0] || m > s.micro[n-1]:
		return s.all
	}
	i := sort.SearchFloat64s(s.micro, m) // s.micro[i-1] < m ≤ s.micro[i], or i = 0 at m = s.micro[0]
	if s.micro[i] == m {
		return s.ratio[i]
	}
	lo, hi := math.Log(s.micro[i-1]), math.Log(s.micro[i])
	f := (math.Log(m) - lo) / (hi - lo)
	return s.ratio[i-1] + f*(s.ratio[i]-s.ratio[i-1])
}

// fitScales fits, for each op kind of scaledOps and each micro-batch size
// m = B/M the records measured, the factor by which the records' ops of
// that kind take longer than the fits price them: the median over the
// records at m of their measured mean time per step in ops of the kind,
// summed over devices, over the same ops priced by the fits.
//
// The lines are fitted to each block's typical time per call, the median
// of a run's calls and the densest cluster over runs (see typical), but a
// step takes the sum of its ops, and a sum follows the calls' mean: the
// calls' times are skewed to the slow side (an allocation that faults its
// pages in, a garbage collection, a cache another op just emptied), so
// summing typical block times prices a step short. The factor measures
// that in the records themselves, on whole ops, rather than assuming a
// distribution for the calls. It depends on m because the working set
// does: measured at 32×32 on two cores, 1.05–1.08 for ResNet-50's
// forward at m ≤ 8 and 1.10 at m = 16, where a step's activations no
// longer fit the caches. Between measured sizes the factor is
// interpolated, and outside them it is the median over all records (see
// opScale.at). A language model's m is its micro-batch's tokens, m·S: its
// working set grows with them whatever the sequence length, so that its
// records at every sequence length measure one curve, which a forecast
// at a sequence length never run reads between them.
//
// The records of each device count K give their own scales too, which a
// forecast for that K uses: two devices each running their own stage keep
// different data in their caches than one device running every stage.
// A forecast for a K no record measured takes the scales of all records.
//
// A kind no record measured keeps 1; recompute and predict, priced by the
// forward lines when they were never measured, take forward's factors
// then too. A measured recompute's factor is the median of its own
// ratios and forward's at the same K and m together: a recompute runs the
// forward's kernels on the same shapes, but only GPipe with checkpointing
// records it, so on its own it rests on a few runs of one configuration
// per size (on the validation dataset 5 ratios against forward's 20,
// whose medians differed by 5 % at m = 2 from noise alone). Records
// without per-device busy times, or of a model this build cannot
// simulate, are left out.
func (c *CostModel) fitScales(recs []*profiler.Record) {
	c.scale = map[string]opScales{}
	ratios := map[string]map[int]map[int][]float64{} // op → K → m → ratios
	for _, op := range scaledOps {
		ratios[op] = map[int]map[int][]float64{}
	}
	pricedOf := map[string]map[string]float64{} // by runKey: repeated runs price alike
	for _, r := range recs {
		if len(r.Devices) == 0 {
			continue // no busy times to compare with
		}
		k := runKey(r)
		priced, ok := pricedOf[k]
		if !ok {
			var err error
			if priced, err = c.pricedBusy(r); err != nil {
				// A model or schedule this build cannot simulate:
				// Predict reports it when asked to forecast one.
				priced = nil
			}
			pricedOf[k] = priced
		}
		if priced == nil {
			continue
		}
		measured := map[string]float64{}
		for _, d := range r.Devices {
			for op, ns := range d.BusyNanosByOp {
				measured[op] += float64(ns)
			}
		}
		m, devs := int(callSize(r.Config.MicroBatchSize(), r.Config.Seq)), r.Config.Devices
		for _, op := range scaledOps {
			if priced[op] > 0 && measured[op] > 0 {
				if ratios[op][devs] == nil {
					ratios[op][devs] = map[int][]float64{}
				}
				ratios[op][devs][m] = append(ratios[op][devs][m], measured[op]/priced[op])
			}
		}
	}
	for _, op := range scaledOps {
		byK, note := ratios[op], ""
		split := op == "backward-input" || op == "backward-weight"
		switch {
		case len(byK) == 0 && (op == "recompute" || op == "predict") && len(ratios["forward"]) > 0:
			byK, note = ratios["forward"], " (never measured: forward's)"
		case len(byK) == 0 && split && len(ratios["backward"]) > 0:
			byK, note = ratios["backward"], " (never measured: backward's)"
		case op == "recompute":
			byK, note = withRatiosOf(byK, ratios["forward"]), " (with forward's)"
		}
		if len(byK) == 0 {
			c.reports = append(c.reports, FitReport{Name: "scale " + op + " (no data: 1)", Variable: "none", Unit: "×", Line: Line{Intercept: 1}})
			continue
		}
		pooled := map[int][]float64{}
		for _, byM := range byK {
			for m, v := range byM {
				pooled[m] = append(pooled[m], v...)
			}
		}
		ss := opScales{pooled: c.opScale(pooled, "scale "+op, note), byK: map[int]opScale{}}
		for _, k := range slices.Sorted(maps.Keys(byK)) {
			ss.byK[k] = c.opScale(byK[k], fmt.Sprintf("scale %s on %d devices", op, k), note)
		}
		c.scale[op] = ss
	}
}

// opScale fits one scale from its ratios by micro-batch size and reports
// each size's median under name.
func (c *CostModel) opScale(byM map[int][]float64, name, note string) opScale {
	var s opScale
	var all []float64
	for _, v := range byM {
		all = append(all, v...)
	}
	s.all = profiler.Median(all)
	for _, m := range slices.Sorted(maps.Keys(byM)) {
		v := byM[m]
		l := Line{Intercept: profiler.Median(v), Points: len(v)}
		var ss float64
		for _, x := range v {
			ss += (x - l.Intercept) * (x - l.Intercept)
			l.MaxRelErr = math.Max(l.MaxRelErr, math.Abs(x-l.Intercept)/l.Intercept)
		}
		l.RMSE = math.Sqrt(ss / float64(len(v)))
		s.micro = append(s.micro, float64(m))
		s.ratio = append(s.ratio, l.Intercept)
		c.reports = append(c.reports, FitReport{Name: fmt.Sprintf("%s at %d %s%s", name, m, c.sizeVariable(), note), Variable: "none", Unit: "×", Line: l})
	}
	return s
}

// opScales are an op kind's scales: over every record, and over the
// records of each device count.
type opScales struct {
	pooled opScale
	byK    map[int]opScale
}

// Scale returns the factor the price of an op of kind op is multiplied
// by in a configuration of devices devices and micro-batches of size micro
// (see fitScales): their samples, a language model's tokens (samples
// times the sequence length): the scale of the records of that device count where
// there are any, else of all records; 1 for kinds the scales do not
// cover.
func (c *CostModel) Scale(op string, devices, micro int) float64 {
	ss, ok := c.scale[op]
	if !ok {
		return 1
	}
	if s, ok := ss.byK[devices]; ok {
		return s.at(float64(micro))
	}
	return ss.pooled.at(float64(micro))
}

// pricedBusy returns the time per step the fits price the ops of each
// kind of scaledOps at in the configuration and partition of r, summed
// over devices, unscaled.
func (c *CostModel) pricedBusy(r *profiler.Record) (map[string]float64, error) {
	cfg, err := config.FromRecord(r)
	if err != nil {
		return nil, err
	}
	sim, err := newSimulation(c, cfg)
	if err != nil {
		return nil, err
	}
	sim.unscaled = true
	out := map[string]float64{}
	for _, ops := range sim.prog.Devices {
		for _, o := range ops {
			if !o.Kind.Fitted() {
				continue
			}
			p, err := sim.priceOp(o, 0)
			if err != nil {
				return nil, err
			}
			out[o.Kind.String()] += p.nanos
		}
	}
	return out, nil
}

// withRatiosOf returns own's ratios with other's added at the device
// counts and micro-batch sizes own measured.
func withRatiosOf(own, other map[int]map[int][]float64) map[int]map[int][]float64 {
	out := map[int]map[int][]float64{}
	for k, byM := range own {
		out[k] = map[int][]float64{}
		for m, v := range byM {
			out[k][m] = append(slices.Clone(v), other[k][m]...)
		}
	}
	return out
}
