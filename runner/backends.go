package runner

// The runner describes every model it trains (models.Describe opens the
// meta backend by name) and runs whole schedules on meta devices for the
// predictor's memory forecasts, so it links the meta backend itself;
// config.go links the default backend, cpu.
import _ "github.com/pipecast/pipecast/tensor/meta" // registers the "meta" backend
