package archfig

// Sizes of the figure's text, in pixels.
const (
	titleSize   = 16
	headingSize = 13
	boxTitle    = 14
	boxSub      = 12
	labelSize   = 12
)

// Architecture returns the figure of docs/architecture.md: the command
// line builds one configuration and its schedule program (shared); the
// runner executes the program and the profiler records it (measure); the
// predictor fits costs to those records, simulates the same program with
// them and replays it on the meta backend for memory (forecast); reports
// render records of either kind.
//
// The coordinates are placed by hand on a 1000-pixel-wide canvas: the
// shared middle runs down the centre, the measuring path down the left
// column and the forecasting path down the right, the measured records
// crossing over to the fit.
func Architecture() Figure {
	return Figure{
		Title: "pipecast: one program, measured or forecast",
		W:     1000,
		H:     810,
		Groups: []Group{
			{ID: "shared", Rect: Rect{150, 126, 700, 180}, Path: Shared,
				Label: Text{S: "shared by both paths", At: Point{162, 143}, Size: labelSize, Bold: true}},
			{ID: "executes", Rect: Rect{20, 440, 324, 222}, Path: Measure},
		},
		Boxes: []Box{
			{ID: "cli", Title: "pipecast profile, predict, plan, report, models", Sub: "internal/cli",
				Rect: Rect{280, 44, 440, 50}, Path: Shared},
			{ID: "config", Title: "one configuration, normalised once", Sub: "config · sweeps · partition and balance",
				Rect: Rect{200, 150, 600, 50}, Path: Shared},
			{ID: "schedule", Title: "the program: per device its ordered ops", Sub: "schedule · options → program · checker · equal-cost simulator",
				Rect: Rect{200, 246, 600, 50}, Path: Shared},

			{ID: "runner", Title: "one worker per device runs every op", Sub: "runner · calibration, probe, clock sync",
				Rect: Rect{20, 362, 450, 50}, Path: Measure},
			{ID: "tensor", Title: "tensor backends", Sub: "tensor/cpu · tensor/cuda (+emu) · tensor/meta",
				Rect: Rect{30, 450, 304, 44}, Path: Measure},
			{ID: "models", Title: "layers, zoo, partitioner", Sub: "models",
				Rect: Rect{30, 502, 304, 44}, Path: Measure},
			{ID: "datasets", Title: "synthetic, CIFAR-10, MNIST, text", Sub: "datasets",
				Rect: Rect{30, 554, 304, 44}, Path: Measure},
			{ID: "comm", Title: "transfers: in-process or MPI", Sub: "runner/comm · runner/comm/mpi",
				Rect: Rect{30, 606, 304, 44}, Path: Measure},
			{ID: "records", Title: "run records", Sub: "profiler · JSONL",
				Rect: Rect{356, 526, 114, 50}, Path: Measure},

			{ID: "simulate", Title: "simulate the same program with fitted costs", Sub: "predictor",
				Rect: Rect{530, 362, 450, 50}, Path: Forecast},
			{ID: "fit", Title: "fit the costs", Sub: "predictor",
				Rect: Rect{530, 526, 212, 50}, Path: Forecast},
			{ID: "memory", Title: "memory replay", Sub: "runner.MetaStep · tensor/meta",
				Rect: Rect{768, 526, 212, 50}, Path: Forecast},
			{ID: "forecasts", Title: "forecast records", Sub: "profiler · records of kind predicted",
				Rect: Rect{530, 640, 450, 50}, Path: Forecast},
			{ID: "plan", Title: "plan under a memory budget", Sub: "predictor · schedules, micro-batch counts, splits",
				Rect: Rect{640, 740, 340, 50}, Path: Forecast},

			{ID: "reports", Title: "tables, SVG timelines, Chrome trace, pprof", Sub: "reports",
				Rect: Rect{20, 740, 450, 50}, Path: Shared},
		},
		Arrows: []Arrow{
			arrow("cli", "config", Shared, "flags → config.Sweep", Point{510, 116}, Start, Point{500, 94}, Point{500, 150}),
			arrow("config", "schedule", Shared, "Config.Program", Point{510, 228}, Start, Point{500, 200}, Point{500, 246}),
			arrow("schedule", "runner", Measure, "program", Point{237, 328}, End, Point{245, 296}, Point{245, 362}),
			arrow("schedule", "simulate", Forecast, "the same program", Point{778, 328}, Start, Point{770, 296}, Point{770, 362}),

			arrow("runner", "executes", Measure, "executes with", Point{190, 430}, Start, Point{182, 412}, Point{182, 440}),
			arrow("runner", "records", Measure, "each step", Point{421, 474}, Start, Point{413, 412}, Point{413, 526}),
			arrow("records", "reports", Measure, "measured", Point{421, 664}, Start, Point{413, 576}, Point{413, 740}),

			arrow("records", "fit", Forecast, "records", Point{500, 545}, Middle, Point{470, 551}, Point{530, 551}),
			arrow("fit", "simulate", Forecast, "fitted costs", Point{644, 474}, Start, Point{636, 526}, Point{636, 412}),
			arrow("simulate", "memory", Forecast, "simulated order", Point{882, 474}, End, Point{890, 412}, Point{890, 526}),
			arrow("simulate", "forecasts", Forecast, "step times", Point{747, 612}, End, Point{755, 412}, Point{755, 640}),
			arrow("memory", "forecasts", Forecast, "peak memory", Point{898, 612}, Start, Point{890, 576}, Point{890, 640}),
			arrow("forecasts", "plan", Forecast, "ranks forecasts", Point{882, 719}, End, Point{890, 690}, Point{890, 740}),
			arrow("forecasts", "reports", Forecast, "predicted", Point{515, 759}, Middle, Point{560, 690}, Point{560, 765}, Point{470, 765}),
			{From: "plan", To: "config", Path: Forecast, Dashed: true,
				Label:  label("each candidate", Point{920, 168}, Middle, Forecast),
				Points: []Point{{980, 765}, {992, 765}, {992, 175}, {800, 175}}},
		},
		Notes: []Text{
			{S: "measure: run and record", At: Point{20, 350}, Size: headingSize, Bold: true, Path: Measure},
			{S: "forecast: fit and simulate", At: Point{530, 350}, Size: headingSize, Bold: true, Path: Forecast},
		},
	}
}

func label(s string, at Point, anchor Anchor, path Path) Text {
	return Text{S: s, At: at, Anchor: anchor, Size: labelSize, Path: path}
}

func arrow(from, to string, path Path, s string, at Point, anchor Anchor, points ...Point) Arrow {
	return Arrow{From: from, To: to, Points: points, Label: label(s, at, anchor, path), Path: path}
}
