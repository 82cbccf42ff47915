package reports

import (
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
}

// roundPoints groups the records measured in rounds (Round > 0) by
// configuration, one point each where its first round stood; records
// outside rounds stay points of their own.
func roundPoints(recs []profiler.Record) []roundPoint {
	var out []roundPoint
	var groups [][]profiler.Record
	index := map[string]int{}
	for _, r := range recs {
		if r.Round == 0 {
			out = append(out, roundPoint{rec: r, rounds: 1})
			groups = append(groups, nil)
			continue
		}
		k := roundKey(&r)
		if i, ok := index[k]; ok {
			groups[i] = append(groups[i], r)
			continue
		}
		index[k] = len(out)
		out = append(out, roundPoint{})
		groups = append(groups, []profiler.Record{r})
	}
	for i, g := range groups {
		if g == nil {
			continue
		}
		slices.SortStableFunc(g, func(a, b profiler.Record) int {
			return int(a.Summary.StepNanosMedian - b.Summary.StepNanosMedian)
		})
		mid := g[(len(g)-1)/2]
		p := roundPoint{rec: mid, rounds: len(g)}
		if m := float64(mid.Summary.StepNanosMedian); m > 0 {
			p.spread = float64(g[len(g)-1].Summary.StepNanosMedian-g[0].Summary.StepNanosMedian) / m
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
