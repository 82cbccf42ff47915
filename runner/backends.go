package runner

// The runner trains on the default backend unless told otherwise, and
// runs whole schedules on meta devices for the predictor's memory
// forecasts (MetaStep), so it links both; models.Describe opens the meta
// backend by name too.
import (
	_ "github.com/pipecast/pipecast/tensor/cpu" // registers the default "cpu" backend
)
