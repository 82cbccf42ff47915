// Package schedule owns the schedule programs: pure functions that turn a
// device count K, a micro-batch count M and schedule options into a
// program, the ordered operations of every device, for the single-device,
// GPipe, cooperative and 1F1B schedules; and the checks that a program
// cannot deadlock and that its sends and receives match. It executes
// nothing: the runner runs programs and the predictor simulates them.
package schedule
