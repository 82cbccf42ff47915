package reports

import (
	"strconv"
	"strings"

	"github.com/pipecast/pipecast/profiler"
)

// deviceStages returns the stages the record's partition puts on device
// d, in increasing order: one for most schedules, several under
// interleaved, where device k holds stages k, k+K, …; nil when the
// partition names none on d.
func deviceStages(rec *profiler.Record, d int) []int {
	var out []int
	for s, st := range rec.Partition {
		if st.Device == d {
			out = append(out, s)
		}
	}
	return out
}

// stagesLabel names the stages a device holds: "stage 2" for one (first,
// its stage, when held lists fewer than two), "stages 0, 2" or "stages
// 0, 4, 8" for two or three, and "stages 0, 4 … 12" for more, whose steps
// are all the same under interleaved.
func stagesLabel(held []int, first int) string {
	if len(held) < 2 {
		return "stage " + strconv.Itoa(first)
	}
	return "stages " + stagesList(held)
}

// stagesList lists stages as stagesLabel does, without the word: "0, 2"
// or "0, 4 … 12".
func stagesList(held []int) string {
	if len(held) > 3 {
		return strconv.Itoa(held[0]) + ", " + strconv.Itoa(held[1]) + " … " + strconv.Itoa(held[len(held)-1])
	}
	parts := make([]string, len(held))
	for i, s := range held {
		parts[i] = strconv.Itoa(s)
	}
	return strings.Join(parts, ", ")
}
