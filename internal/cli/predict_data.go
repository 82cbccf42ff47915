package cli

import (
	"fmt"
	"slices"
	"strings"

	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/predictor"
	"github.com/pipecast/pipecast/profiler"
)

// targets returns the keys of the data that the flags select: every key
// whose model, sizes, threads, backend, transport and optimizer are among
// the values given. A value given that selects no key is refused with a
// usage error that lists the keys the data holds.
func (o *PredictOptions) targets(recs []profiler.Record) ([]predictor.Key, error) {
	type filter struct {
		flag  string
		n     int // values given; 0: the flag was not given
		match func(k predictor.Key, i int) bool
		value func(i int) string
	}
	filters := []filter{
		{"model", len(o.Models), func(k predictor.Key, i int) bool { return o.Models[i] == k.Model },
			func(i int) string { return o.Models[i] }},
	}
	for _, sf := range models.SizeFlags() {
		values := sf.Values(o.SizeVariants)
		// A language model's key spans every sequence length (see
		// predictor.KeySize): the flag of the sequence lengths, the one
		// that lists SizeVariants.Seqs, selects it at any.
		spans := len(sf.Values(models.SizeVariants{Seqs: []int{0}})) > 0
		filters = append(filters, filter{sf.Name, len(values),
			func(k predictor.Key, i int) bool {
				return spans && k.SpansSeq() || sf.Selects(o.SizeVariants, i, k.Model, k.SizeRecord)
			},
			func(i int) string { return values[i] }})
	}
	filters = append(filters, []filter{
		{"threads", min(o.Threads, 1), func(k predictor.Key, _ int) bool { return o.Threads == k.Threads },
			func(int) string { return fmt.Sprint(o.Threads) }},
		{"backend", min(len(o.Backend), 1), func(k predictor.Key, _ int) bool { return o.Backend == k.Backend },
			func(int) string { return o.Backend }},
		{"transport", min(len(o.Transport), 1), func(k predictor.Key, _ int) bool { return predictor.KeyTransport(o.Transport) == k.Transport },
			func(int) string { return o.Transport }},
		{"optimizer", min(len(o.Optimizer), 1), func(k predictor.Key, _ int) bool { return predictor.KeyOptimizer(o.Optimizer) == k.Optimizer },
			func(int) string { return o.Optimizer }},
	}...)
	keys := dataKeys(recs)
	used := make([][]bool, len(filters))
	for f := range filters {
		used[f] = make([]bool, filters[f].n)
	}
	var out []predictor.Key
	for _, k := range keys {
		hits := make([][]bool, len(filters))
		ok := true
		for f, flt := range filters {
			if flt.n == 0 {
				continue
			}
			hits[f] = make([]bool, flt.n)
			matched := false
			for i := range flt.n {
				hits[f][i] = flt.match(k, i)
				matched = matched || hits[f][i]
			}
			ok = ok && matched
		}
		if !ok {
			continue
		}
		out = append(out, k)
		for f := range hits {
			for i, h := range hits[f] {
				used[f][i] = used[f][i] || h
			}
		}
	}
	var missing []string
	for f, flt := range filters {
		for i, u := range used[f] {
			if s := "--" + flt.flag + " " + flt.value(i); !u && !slices.Contains(missing, s) {
				missing = append(missing, s)
			}
		}
	}
	if len(out) > 0 && len(missing) == 0 {
		return out, nil
	}
	what := "the flags given"
	if len(missing) > 0 {
		what = strings.Join(missing, ", ")
	}
	var held []string
	for _, k := range keys {
		held = append(held, fmt.Sprintf("  %s: %d runs", k, countOfKeys(recs, []predictor.Key{k})))
	}
	return nil, usageErrorf("the data holds no measured runs for %s, so it cannot forecast them; it holds runs of:\n%s",
		what, strings.Join(held, "\n"))
}
