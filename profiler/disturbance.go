package profiler

import "math"

// Disturbances returns, for each record of recs, how much more its
// machine was disturbed than in the quietest run of the same machine
// among recs: its probe's median over the smallest probe median of the
// records with the same host and CPU model, minus 1. 0 is as quiet as the
// quietest run, 0.12 a probe 12 % slower. A record without a probe gets
// NaN. Probe times compare only on one machine, so a dataset from
// several machines is judged machine by machine.
func Disturbances(recs []Record) []float64 {
	type machine struct{ host, cpu string }
	quietest := map[machine]int64{}
	for i := range recs {
		if m := probeMedian(&recs[i]); m > 0 {
			k := machine{recs[i].Env.Host, recs[i].Env.CPUModel}
			if q, ok := quietest[k]; !ok || m < q {
				quietest[k] = m
			}
		}
	}
	out := make([]float64, len(recs))
	for i := range recs {
		out[i] = math.NaN()
		if m := probeMedian(&recs[i]); m > 0 {
			q := quietest[machine{recs[i].Env.Host, recs[i].Env.CPUModel}]
			out[i] = float64(m)/float64(q) - 1
		}
	}
	return out
}

// probeMedian returns r's median probe time, 0 for a record without one.
func probeMedian(r *Record) int64 {
	if r.Env.Probe == nil {
		return 0
	}
	return r.Env.Probe.Median()
}
