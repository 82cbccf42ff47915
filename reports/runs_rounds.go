package reports

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"

	"github.com/pipecast/pipecast/profiler"
)

// roundPoint is one configuration of a runs table: a record outside
// rounds, or the median of the rounds that measured one configuration
// (profile --rounds).
type roundPoint struct {
	// rec is the record the row shows: the round whose median step is
	// the rounds' median (the lower middle one of an even count).
	rec profiler.Record
	// rounds is how many rounds measured the configuration (1 outside
	// rounds), and spread their relative spread: (max − min) / median of
	// their median steps.
	rounds int
	spread float64
	// members are the indices of the point's records in the records
	// given to roundPoints, in their order there.
	members []int
}

// roundPoints groups the records measured in rounds (Round > 0) by
// configuration, one point each where its first round stood; records
// outside rounds stay points of their own.
func roundPoints(recs []profiler.Record) []roundPoint {
	var out []roundPoint
	index := map[string]int{}
	for i := range recs {
		r := &recs[i]
		if r.Round == 0 {
			out = append(out, roundPoint{rec: *r, rounds: 1, members: []int{i}})
			continue
		}
		k := roundKey(r)
		if at, ok := index[k]; ok {
			out[at].members = append(out[at].members, i)
			continue
		}
		index[k] = len(out)
		out = append(out, roundPoint{members: []int{i}})
	}
	for i, p := range out {
		if p.rounds == 1 {
			continue
		}
		g := slices.Clone(p.members)
		slices.SortStableFunc(g, func(a, b int) int {
			return cmp.Compare(recs[a].Summary.StepNanosMedian, recs[b].Summary.StepNanosMedian)
		})
		mid := &recs[g[(len(g)-1)/2]]
		p.rec, p.rounds = *mid, len(g)
		if m := float64(mid.Summary.StepNanosMedian); m > 0 {
			p.spread = float64(recs[g[len(g)-1]].Summary.StepNanosMedian-recs[g[0]].Summary.StepNanosMedian) / m
		}
		out[i] = p
	}
	return out
}

// roundKey identifies a configuration: what ran, where, on which
// partition. Its rounds differ in nothing else.
func roundKey(r *profiler.Record) string {
	c := r.Config
	c.BalanceNanos = nil // the partition, not the times that chose it
	return fmt.Sprintf("%s|%+v|%s|%s|%v", r.Kind, c, r.Env.Backend, profiler.TransportOf(&r.Env), r.Bounds())
}

// roundsCell shows a point's rounds and their spread: "3 (8.2 %)";
// machine formats carry the spread as a fraction.
func roundsCell(p roundPoint) Cell {
	if p.rounds < 2 {
		return Empty("—")
	}
	return Cell{Value: p.spread, Text: strconv.Itoa(p.rounds) + " (" + strconv.FormatFloat(100*p.spread, 'f', 1, 64) + " %)"}
}

// roundsFootnote explains the rounds column.
const roundsFootnote = "rounds: how many rounds (profile --rounds) measured the configuration, its row showing the " +
	"median round, and in parentheses their spread: (max − min) / median of the rounds' median steps."
